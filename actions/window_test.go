package actions

import "testing"

func TestWindowStampOnlyIfAbsent(t *testing.T) {
	const earlier = "2026-11-30T08:00:00Z"
	e := newEnv(t, mkPool(poolName, ann(keyWindow, earlier)))
	res, err := step(e.pass(e.targets()), "window-stamp", nil)
	if err != nil || res.Outcome != Raced {
		t.Fatalf("%s %v", res.Outcome, err)
	}
	wantAnn(t, "pool", e.pool(poolName).Annotations, ann(keyWindow, earlier))
}

func TestWindowClear(t *testing.T) {
	const stamp = "2026-11-30T08:00:00Z"
	for _, tc := range []struct {
		name      string
		observed  string // the stamp the pass read
		fresh     string // the stamp on the fresh copy
		out       Outcome
		wantAfter string
	}{
		{"the stamp this pass saw", stamp, stamp, Claimed, ""},
		{"another pass cleared it", stamp, "", Raced, ""},
		{"a new occurrence re-stamped it", stamp, "2026-11-30T09:30:00Z", Raced, "2026-11-30T09:30:00Z"},
		{"stamped after this pass read none", "", stamp, Raced, stamp},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, mkPool(poolName, stampAnn(tc.fresh)))
			targets := e.targets()
			targets.Pool = mkPool(poolName, stampAnn(tc.observed))
			res, err := step(e.pass(targets), "window-clear", nil)
			if err != nil || res.Outcome != tc.out {
				t.Fatalf("%s %v, want %s", res.Outcome, err, tc.out)
			}
			if res.Won() != (tc.out == Claimed) {
				t.Fatal("Won disagrees with the outcome")
			}
			if res.WindowOpenedAt != tc.observed {
				t.Fatalf("window opened at %q, want the observed %q", res.WindowOpenedAt, tc.observed)
			}
			if got := e.pool(poolName).Annotations[keyWindow]; got != tc.wantAfter {
				t.Fatalf("window-opened-at %q, want %q", got, tc.wantAfter)
			}
		})
	}
}

func stampAnn(stamp string) map[string]string {
	if stamp == "" {
		return nil
	}
	return ann(keyWindow, stamp)
}
