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

// Approx renders a span to the two largest units, truncated: 2d3h, 4h20m,
// 12m5s, 40s. Operator output does not need the seconds of a week-long span.
func Approx(d time.Duration) string {
	switch {
	case d < 0:
		return "-" + Approx(-d)
	case d >= 24*time.Hour:
		d = d.Truncate(time.Hour)
	case d >= time.Hour:
		d = d.Truncate(time.Minute)
	default:
		d = d.Truncate(time.Second)
	}
	return FormatDuration(d)
}

// FormatOccurrence writes an occurrence in its own time zone, as an
// operator reads it: "Wed 2026-12-02 02:00 – 06:00 JST (Asia/Tokyo)", the
// end's date given when it falls on another day.
func FormatOccurrence(start, end time.Time, loc *time.Location) string {
	if loc == nil {
		loc = time.UTC
	}
	start, end = start.In(loc), end.In(loc)
	e := end.Format("15:04")
	if end.YearDay() != start.YearDay() || end.Year() != start.Year() {
		e = end.Format("Mon 2006-01-02 15:04")
	}
	return fmt.Sprintf("%s – %s %s (%s)", start.Format("Mon 2006-01-02 15:04"), e, start.Format("MST"), loc)
}
