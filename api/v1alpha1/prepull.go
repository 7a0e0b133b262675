package v1alpha1

import (
	"encoding/json"
	"fmt"
	"time"
)

// How a pre-pull phase ended (PrePullRecord.Ended).
const (
	PrePullSucceeded = "succeeded" // every image container runs or ran: every image is on the node
	PrePullFailed    = "failed"    // an image could not be pulled (the rest could), or the Pod failed: the kubelet's deadline, an earlier attempt's Pod
	PrePullTimeout   = "timeout"   // prePull.timeout passed with an image still pulling or not reached, or no Pod created
	PrePullCut       = "cut"       // Karpenter deleted the old claim first, or the placeholder went
	PrePullNothing   = "nothing"   // no image was left to pull when the Pod was to be created
)

// +kubebuilder:object:generate=false

// PrePullRecord is what a rotation's pre-pull phase came to, recorded on
// the NodePool as JSON in noderotation.io/prepull, once, when it ends
// (docs/design.md#pre-pull): the completion line and the prepull phase's
// duration read it.
type PrePullRecord struct {
	Ended string `json:"ended"`
	// Wait is the phase's length: draining-at to its end.
	Wait time.Duration `json:"-"`
	// Pulled: containers that started (their image is on the node);
	// Failed: containers whose image could not be pulled; Unfinished:
	// the rest, not reached when the phase ended; Skipped: the selection's
	// images not put in the Pod (present, excluded, over the limit, …).
	Pulled     int `json:"pulled"`
	Failed     int `json:"failed"`
	Unfinished int `json:"unfinished"`
	Skipped    int `json:"skipped"`
}

type prePullWire struct {
	PrePullRecord
	Wait string `json:"wait"`
}

// String is the record as the annotation holds it.
func (r PrePullRecord) String() string {
	b, _ := json.Marshal(prePullWire{r, r.Wait.String()}) // a struct of strings and ints always marshals
	return string(b)
}

// ParsePrePullRecord reads noderotation.io/prepull.
func ParsePrePullRecord(raw string) (PrePullRecord, error) {
	var w prePullWire
	if err := json.Unmarshal([]byte(raw), &w); err != nil {
		return PrePullRecord{}, fmt.Errorf("not a pre-pull record: %w", err)
	}
	wait, err := time.ParseDuration(w.Wait)
	if err != nil || wait < 0 {
		return PrePullRecord{}, fmt.Errorf("wait %q is not a duration ≥ 0", w.Wait)
	}
	switch w.Ended {
	case PrePullSucceeded, PrePullFailed, PrePullTimeout, PrePullCut, PrePullNothing:
	default:
		return PrePullRecord{}, fmt.Errorf("ended %q is none of %s, %s, %s, %s, %s", w.Ended, PrePullSucceeded, PrePullFailed, PrePullTimeout, PrePullCut, PrePullNothing)
	}
	r := w.PrePullRecord
	r.Wait = wait
	return r, nil
}
