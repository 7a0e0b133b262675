package v1alpha1

import (
	"testing"
	"time"
)

// recent-rotations keeps the last RecentRotationsKept, oldest first, and
// a malformed value is replaced rather than kept.
func TestRecentRotations(t *testing.T) {
	raw := ""
	for i := 1; i <= 7; i++ {
		raw = AppendRecentRotation(raw, time.Duration(i)*time.Minute+400*time.Millisecond)
	}
	if raw != "3m0s,4m0s,5m0s,6m0s,7m0s" {
		t.Errorf("after 7 rotations: %q", raw)
	}
	got, err := ParseRecentRotations(raw)
	if err != nil || len(got) != 5 || got[0] != 3*time.Minute || got[4] != 7*time.Minute {
		t.Errorf("parsed %v, %v", got, err)
	}
	for _, bad := range []string{"soon", "5m,-1m", "5m,,6m", "0s"} {
		if _, err := ParseRecentRotations(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
		if got := AppendRecentRotation(bad, time.Minute); got != "1m0s" {
			t.Errorf("append to %q: %q", bad, got)
		}
	}
	if got, err := ParseRecentRotations(""); got != nil || err != nil {
		t.Errorf("empty: %v %v", got, err)
	}
}
