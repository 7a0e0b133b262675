package process

import (
	"errors"
	"testing"
	"time"
)

// The kernel's random pick repeats a port within a few hundred calls
// (measured: 257 repeats in 2,000 picks); FreePorts must not.
func TestFreePortsNeverRepeatAPortInOneProcess(t *testing.T) {
	seen := map[int]int{}
	for call := range 1500 {
		ports, err := FreePorts(2)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range ports {
			if before, ok := seen[p]; ok {
				t.Fatalf("call %d returned port %d, which call %d returned already", call, p, before)
			}
			seen[p] = call
		}
	}
}

func TestAwaitServing(t *testing.T) {
	for _, tc := range []struct {
		name, script string
		want         func(error) bool
	}{
		{"serving", `echo starting; echo 'msg":"` + ServingLine + `"'; sleep 5`, func(err error) bool { return err == nil }},
		{"port taken", `echo 'listen tcp 127.0.0.1:38559: bind: address already in use'; exit 1`,
			func(err error) bool { return errors.Is(err, ErrPortTaken) }},
		{"other exit", `echo 'no kubeconfig'; exit 1`,
			func(err error) bool { return err != nil && !errors.Is(err, ErrPortTaken) }},
		{"silent", `sleep 5`, func(err error) bool { return err != nil && !errors.Is(err, ErrPortTaken) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Start("/bin/sh", t.TempDir(), "await", "-c", tc.script)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Kill()
			if err := c.AwaitServing(ServingLine, 2*time.Second); !tc.want(err) {
				t.Errorf("AwaitServing = %v; log:\n%s", err, c.Tail(500))
			}
		})
	}
}
