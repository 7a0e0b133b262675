package v1alpha1

import (
	"strings"
	"testing"
	"time"
)

func TestPrePullRecordRoundTrips(t *testing.T) {
	r := PrePullRecord{Ended: PrePullFailed, Wait: 95 * time.Second, Pulled: 2, Failed: 1, Unfinished: 3, Skipped: 4}
	raw := r.String()
	if !strings.Contains(raw, `"wait":"1m35s"`) || !strings.Contains(raw, `"ended":"failed"`) {
		t.Errorf("record %s: want the wait as a Go duration", raw)
	}
	got, err := ParsePrePullRecord(raw)
	if err != nil || got != r {
		t.Errorf("parsed %+v %v, want %+v", got, err, r)
	}
}

func TestAMalformedPrePullRecordIsAnError(t *testing.T) {
	for _, raw := range []string{"", "yes", `{"ended":"succeeded"}`, `{"ended":"maybe","wait":"1s"}`, `{"ended":"cut","wait":"-1s"}`} {
		if r, err := ParsePrePullRecord(raw); err == nil {
			t.Errorf("%q parsed as %+v", raw, r)
		}
	}
}
