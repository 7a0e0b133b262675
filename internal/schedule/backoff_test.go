package schedule

import (
	"testing"
	"time"
)

func TestEscalatedBackoffTable(t *testing.T) {
	cases := []struct {
		base    time.Duration
		retries int
		want    time.Duration
	}{
		{time.Minute, -5, time.Minute},
		{time.Minute, 0, time.Minute},
		{time.Minute, 1, time.Minute},
		{time.Minute, 2, 2 * time.Minute},
		{time.Minute, 3, 4 * time.Minute},
		{time.Minute, 4, 8 * time.Minute},
		{time.Minute, 5, 8 * time.Minute},
		{time.Minute, 1000, 8 * time.Minute},
		{0, 4, 0},
		{45 * time.Minute, 3, 3 * time.Hour},
	}
	for _, c := range cases {
		if got := EscalatedBackoff(c.base, c.retries); got != c.want {
			t.Errorf("EscalatedBackoff(%s, %d) = %s, want %s", c.base, c.retries, got, c.want)
		}
	}
}

func TestRetryWaitAtTheEdges(t *testing.T) {
	// Mon 02:00–06:00 UTC; retryBackoff 30m.
	cal := NewCalendar(mustEntry(t, "UTC", []string{"Mon"}, "02:00", "06:00"))
	cases := []struct {
		failedAt string
		retries  int
		wait     time.Duration
		branch   ClampCase
	}{
		{"02:00", 1, 30 * time.Minute, ClampFits},         // the first instant of the window is inside
		{"04:59", 2, time.Hour, ClampFits},                // ends 05:59, inside
		{"05:00", 2, 30 * time.Minute, ClampSteppedDown},  // 1h ends exactly at the close: outside
		{"05:29", 1, 30 * time.Minute, ClampFits},         // ends 05:59
		{"05:30", 1, 30 * time.Minute, ClampCarriesOver},  // ends at the close; even the base does not fit
		{"05:30", 4, 4 * time.Hour, ClampCarriesOver},     // the escalated wait stands
		{"02:00", 10, 30 * time.Minute, ClampSteppedDown}, // 4h would end at 06:00
		{"01:59", 3, 2 * time.Hour, ClampNotInWindow},
		{"06:00", 3, 2 * time.Hour, ClampNotInWindow}, // the close is outside the window
	}
	for _, c := range cases {
		wait, branch := cal.RetryWait(at(t, "UTC", "2026-11-30 "+c.failedAt), 30*time.Minute, c.retries)
		if wait != c.wait || branch != c.branch {
			t.Errorf("failed at %s retry %d: %s %s, want %s %s", c.failedAt, c.retries, wait, branch, c.wait, c.branch)
		}
	}
}

func TestRetryWaitUsesTheMergedOccurrence(t *testing.T) {
	// Fri 22:00–24:00 and Sat 00:00–04:00 are one window: a 2h wait from
	// Fri 23:00 ends Sat 01:00, inside it.
	cal := NewCalendar(
		mustEntry(t, "UTC", []string{"Fri"}, "22:00", "24:00"),
		mustEntry(t, "UTC", []string{"Sat"}, "00:00", "04:00"),
	)
	wait, branch := cal.RetryWait(at(t, "UTC", "2026-12-04 23:00"), 30*time.Minute, 3)
	if wait != 2*time.Hour || branch != ClampFits {
		t.Errorf("wait %s %s, want 2h %s", wait, branch, ClampFits)
	}
	// Without windows every failure is outside one.
	if wait, branch := NewCalendar().RetryWait(at(t, "UTC", "2026-12-04 23:00"), 30*time.Minute, 2); wait != time.Hour || branch != ClampNotInWindow {
		t.Errorf("empty calendar: %s %s", wait, branch)
	}
}

func TestFormatDurationMore(t *testing.T) {
	cases := []struct {
		d    time.Duration
		want string
	}{
		{time.Nanosecond, "1ns"},
		{time.Microsecond, "1µs"},
		{500 * time.Millisecond, "500ms"},
		{time.Minute + 500*time.Millisecond, "1m500ms"},
		{61 * time.Minute, "1h1m"},
		{25 * time.Hour, "1d1h"},
		{24*time.Hour + time.Second, "1d1s"},
		{7 * 24 * time.Hour, "7d"},
		{2*24*time.Hour + 3*time.Hour + 4*time.Minute + 5*time.Second + 6*time.Millisecond, "2d3h4m5s6ms"},
		{-90 * time.Second, "-1m30s"},
		{-time.Nanosecond, "-1ns"},
		{400 * 24 * time.Hour, "400d"},
	}
	for _, c := range cases {
		if got := FormatDuration(c.d); got != c.want {
			t.Errorf("FormatDuration(%d) = %q, want %q", int64(c.d), got, c.want)
		}
	}
}
