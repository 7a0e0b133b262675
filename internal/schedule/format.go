package schedule

import (
	"fmt"
	"strings"
	"time"
)

// FormatDuration renders d with a day unit and without zero units:
// 4d, 1h17m, 5d22h43m, 15m, 90s, 0s. Negative durations carry a minus sign.
func FormatDuration(d time.Duration) string {
	if d == 0 {
		return "0s"
	}
	var b strings.Builder
	if d < 0 {
		b.WriteByte('-')
		d = -d
	}
	units := []struct {
		size time.Duration
		name string
	}{{24 * time.Hour, "d"}, {time.Hour, "h"}, {time.Minute, "m"}, {time.Second, "s"}}
	for _, u := range units {
		if n := d / u.size; n > 0 {
			fmt.Fprintf(&b, "%d%s", n, u.name)
			d -= n * u.size
		}
	}
	if d > 0 {
		fmt.Fprintf(&b, "%s", d)
	}
	return b.String()
}
