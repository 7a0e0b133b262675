package census

import (
	"time"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
)

// ignored is what the controller does with a malformed operator request.
const ignored = "the request is ignored"

// requests reads the operator's requests on the claim into f
// (docs/design.md#manual-controls): rotate-next "true" or "false", and
// skip-until an RFC3339 time. A malformed value is reported and ignored,
// never acted on; the claim is still counted as it would be without it.
func requests(f *Figures) []BadAnnotation {
	c := f.Claim
	var bad []BadAnnotation
	report := func(key, problem string) {
		bad = append(bad, BadAnnotation{Object: "NodeClaim/" + c.Name, Key: key, Value: c.Annotations[key], Problem: problem, Effect: ignored})
	}
	switch v, ok := c.Annotations[v1alpha1.AnnotationRotateNext]; {
	case !ok || v == "false":
	case v == "true":
		f.RotateNext = true
	default:
		report(v1alpha1.AnnotationRotateNext, `not "true" or "false"`)
	}
	if v, ok := c.Annotations[v1alpha1.AnnotationSkipUntil]; ok {
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			report(v1alpha1.AnnotationSkipUntil, "not an RFC3339 time")
		} else {
			f.SkipUntil = t
		}
	}
	return bad
}

// SkipsPastLastStart reports whether the claim's skip-until, in force
// now, keeps it out until after the last moment a rotation of it may start
// and end by its deadline (LastStart): the skip will cost the node a
// forceful replacement by Karpenter's expiry.
func (f Figures) SkipsPastLastStart(now time.Time) bool {
	return !f.LastStart.IsZero() && now.Before(f.SkipUntil) && !f.SkipUntil.Before(f.LastStart)
}
