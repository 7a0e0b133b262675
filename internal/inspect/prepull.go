package inspect

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
	"github.com/noderotation/node-rotation-controller/internal/observe"
	"github.com/noderotation/node-rotation-controller/internal/prepull"
)

// PrePullView is a rotation's pre-pull phase (docs/design.md#pre-pull):
// each image and its fate while the phase runs or is about to, its record
// once it ended (the Pod, and with it the images' names, is gone then;
// PrePullImagesFailed named the failed ones).
type PrePullView struct {
	Images []prepull.ImageFate `json:"images,omitempty"`
	// Record is the pool's noderotation.io/prepull, as written.
	Record json.RawMessage `json:"record,omitempty"`
	record *v1alpha1.PrePullRecord
	// Problem says why a record on the pool could not be read.
	Problem string `json:"problem,omitempty"`
}

// prePullView is the slot's phase as its observation holds it, nil when
// the rotation has none to show.
func prePullView(obs *observe.Observation) *PrePullView {
	v := &PrePullView{}
	if raw := obs.Pool.Annotations[obs.Slot.Key(v1alpha1.AnnotationPrePull)]; raw != "" {
		r, err := v1alpha1.ParsePrePullRecord(raw)
		if err != nil {
			v.Problem = fmt.Sprintf("NodePool %s: annotation %s: %v", obs.Pool.Name, obs.Slot.Key(v1alpha1.AnnotationPrePull), err)
		} else {
			v.Record, v.record = json.RawMessage(raw), &r
		}
		return v
	}
	switch p := obs.PrePull; {
	case len(p.Pods) > 0:
		v.Images = prepull.FatesAll(p.Pods)
	case len(p.Images) > 0:
		v.Images = prepull.Planned(p.Images)
	default:
		return nil
	}
	return v
}

// prePullRows are explain's rows for the phase: a summary, then one row
// per image.
func prePullRows(v *PrePullView) [][2]string {
	switch {
	case v == nil:
		return nil
	case v.Problem != "":
		return [][2]string{{"Pre-pull", v.Problem}}
	case v.record != nil:
		r := v.record
		return [][2]string{{"Pre-pull", fmt.Sprintf("ended %s after %s: %d pulled, %d failed, %d unfinished, %d skipped",
			r.Ended, r.Wait, r.Pulled, r.Failed, r.Unfinished, r.Skipped)}}
	}
	counts := map[string]int{}
	var order []string
	for _, f := range v.Images {
		if counts[f.Fate] == 0 {
			order = append(order, f.Fate)
		}
		counts[f.Fate]++
	}
	parts := make([]string, 0, len(order))
	for _, f := range order {
		parts = append(parts, fmt.Sprintf("%d %s", counts[f], f))
	}
	rows := [][2]string{{"Pre-pull", fmt.Sprintf("%d %s: ", len(v.Images), plural(len(v.Images), "image", "images")) + strings.Join(parts, ", ")}}
	for _, f := range v.Images {
		fate := f.Fate
		if f.Installer {
			fate += ", the no-op's installer: no image container starts without it"
		}
		if f.Reason != "" {
			fate += " (" + f.Reason + ")"
		}
		rows = append(rows, [2]string{"  " + f.Image, fate})
	}
	return rows
}
