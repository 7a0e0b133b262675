package main

import (
	"testing"

	"github.com/noderotation/node-rotation-controller/internal/scheme"
)

// The manager hands its Lease over on a clean stop, elects with the
// configured ID in its own namespace, and records Events through the
// broadcaster that budgets each reason apart.
func TestManagerOptions(t *testing.T) {
	o, err := parseFlags(nil)
	if err != nil {
		t.Fatal(err)
	}
	s, err := scheme.New()
	if err != nil {
		t.Fatal(err)
	}
	m := managerOptions(o, s)
	if !m.LeaderElection || !m.LeaderElectionReleaseOnCancel {
		t.Errorf("leader election %v, release on cancel %v: a rolled Pod would wait out the Lease", m.LeaderElection, m.LeaderElectionReleaseOnCancel)
	}
	if m.LeaderElectionNamespace != o.namespace || m.LeaderElectionID != o.leaderElectionID {
		t.Errorf("lease %s/%s, want %s/%s", m.LeaderElectionNamespace, m.LeaderElectionID, o.namespace, o.leaderElectionID)
	}
	if m.EventBroadcaster == nil { //nolint:staticcheck
		t.Error("no Event broadcaster: client-go's default budgets every Warning of an object together")
	}
}

// Profiling is off unless asked for, and served where it was asked.
func TestPprofOnlyWhenAsked(t *testing.T) {
	s, err := scheme.New()
	if err != nil {
		t.Fatal(err)
	}
	off, err := parseFlags(nil)
	if err != nil {
		t.Fatal(err)
	}
	if a := managerOptions(off, s).PprofBindAddress; a != "" && a != "0" {
		t.Errorf("pprof served on %q by default", a)
	}
	on, err := parseFlags([]string{"-pprof-bind-address=127.0.0.1:6060"})
	if err != nil {
		t.Fatal(err)
	}
	if a := managerOptions(on, s).PprofBindAddress; a != "127.0.0.1:6060" {
		t.Errorf("pprof address %q, want 127.0.0.1:6060", a)
	}
}
