package v1alpha1

import (
	"fmt"
	"strings"
	"time"
)

// RecentRotationsKept is how many rotations recent-rotations remembers.
const RecentRotationsKept = 5

// ParseRecentRotations reads recent-rotations: the durations, oldest first,
// or an error naming the value that is not a positive Go duration.
func ParseRecentRotations(raw string) ([]time.Duration, error) {
	if raw == "" {
		return nil, nil
	}
	var out []time.Duration
	for _, f := range strings.Split(raw, ",") {
		d, err := time.ParseDuration(strings.TrimSpace(f))
		if err != nil || d <= 0 {
			return nil, fmt.Errorf("%q is not a positive Go duration", f)
		}
		out = append(out, d)
	}
	return out, nil
}

// AppendRecentRotation is recent-rotations after a rotation that took d:
// d last, the oldest dropped beyond RecentRotationsKept. A malformed value
// is replaced, never kept.
func AppendRecentRotation(raw string, d time.Duration) string {
	prev, err := ParseRecentRotations(raw)
	if err != nil {
		prev = nil
	}
	all := append(prev, max(d.Round(time.Second), time.Second))
	if n := len(all) - RecentRotationsKept; n > 0 {
		all = all[n:]
	}
	parts := make([]string, len(all))
	for i, x := range all {
		parts[i] = x.String()
	}
	return strings.Join(parts, ",")
}
