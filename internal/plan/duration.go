package plan

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// ParseDuration reads a Go duration with an optional leading day count,
// e.g. "14d", "5d12h", "336h" or "90m". "Never" is reported by the caller.
func ParseDuration(s string) (time.Duration, error) {
	var days time.Duration
	rest := s
	if i := strings.IndexByte(s, 'd'); i > 0 {
		n, err := strconv.Atoi(s[:i])
		if err != nil {
			return 0, fmt.Errorf("%q is not a duration (e.g. 14d, 336h, 1h30m)", s)
		}
		days, rest = time.Duration(n)*24*time.Hour, s[i+1:]
	}
	if rest == "" {
		return days, nil
	}
	d, err := time.ParseDuration(rest)
	if err != nil {
		return 0, fmt.Errorf("%q is not a duration (e.g. 14d, 336h, 1h30m)", s)
	}
	return days + d, nil
}
