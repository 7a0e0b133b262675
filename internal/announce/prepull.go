package announce

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	a "github.com/noderotation/node-rotation-controller/actions"
	"github.com/noderotation/node-rotation-controller/internal/metrics"
	"github.com/noderotation/node-rotation-controller/internal/prepull"
)

// The pre-pull phase's announcements (docs/design.md#pre-pull).

// prePullStarted: the pass whose create made the pre-pull Pod says what it
// pulls, where, and for how long at most (docs/design.md#pre-pull).
func (an *Announcer) prePullStarted(s step) {
	res, _ := s.last(a.ActionPrePullEnsure)
	node := ""
	if s.view.SurgeHost != nil {
		node = s.view.SurgeHost.Name
	}
	timeout := s.view.Settings.PrePull.Timeout
	s.log.Info("pre-pull started", "nodeclaim", s.claim(), "prepullPod", prepull.PodName(s.claim()), "surgeNode", node,
		"images", res.PrePullImages, "timeout", timeout.String())
	an.event(s.view.Subject, corev1.EventTypeNormal, string(a.PrePullStarted), fmt.Sprintf(
		"pulling %d images onto surge node %s before the drain, for at most %s", res.PrePullImages, node, timeout))
}

// prePullEnded: the pass whose write recorded the phase's end says how it
// ended and times it; an image the node could not pull is named in a
// Warning, once, as it never blocks the rotation past the timeout.
func (an *Announcer) prePullEnded(s step) {
	res, _ := s.last(a.ActionPrePullRecord)
	if res.PrePull == nil {
		return
	}
	r := res.PrePull.Record
	metrics.Duration.WithLabelValues(s.pool(), "prepull").Observe(r.Wait.Seconds())
	s.log.Info("pre-pull ended", "nodeclaim", s.claim(), "ended", r.Ended, "wait", r.Wait.String(),
		"pulled", r.Pulled, "failed", r.Failed, "unfinished", r.Unfinished, "skipped", r.Skipped)
	if len(res.PrePull.FailedImages) > 0 {
		an.event(s.view.Subject, corev1.EventTypeWarning, "PrePullImagesFailed", fmt.Sprintf(
			"the surge node could not pull %s; the drain starts without them", strings.Join(res.PrePull.FailedImages, ", ")))
	}
	an.event(s.view.Subject, corev1.EventTypeNormal, string(a.PrePullEnded), fmt.Sprintf(
		"pre-pull %s after %s: %d pulled, %d failed, %d unfinished, %d skipped; the drain starts", r.Ended, r.Wait, r.Pulled, r.Failed, r.Unfinished, r.Skipped))
}

// prePullRefused: the API server refused the pre-pull Pod (an admission
// policy, a quota); said once per claim and message, as every pass of the
// phase asks again until its timeout starts the drain.
func (an *Announcer) prePullRefused(s step) {
	res, _ := s.last(a.ActionPrePullEnsure)
	if res.PrePullRefused == "" {
		return
	}
	an.warnKeyed(s.pool(), string(a.PrePullRefused)+"/"+s.claim(), s.view.Subject, string(a.PrePullRefused), fmt.Sprintf(
		"the API server refused pre-pull Pod %s; the drain starts without its images (at prePull.timeout when no pre-pull Pod was made)", res.PrePullRefused),
		"nodeclaim", s.claim())
}
