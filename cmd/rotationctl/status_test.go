package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestExplainWantsKindSlashName(t *testing.T) {
	for _, arg := range []string{"foo", "nodeclaim/", "node/x"} {
		code, _, errOut := runCLI("explain", arg, "--kubeconfig", "/nonexistent")
		if code != exitBadInput || !strings.Contains(errOut, "nodeclaim/NAME") {
			t.Errorf("explain %s: exit %d, %q", arg, code, errOut)
		}
	}
}

func TestStatusNamesAnUnusableKubeconfig(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(bad, []byte("not: [a kubeconfig"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, errOut := runCLI("status", "--kubeconfig", bad)
	if code != exitBadInput || !strings.Contains(errOut, "loading kubeconfig") {
		t.Errorf("exit %d, %q", code, errOut)
	}
	if code, _, errOut := runCLI("status", "-o", "csv", "--kubeconfig", bad); code != exitBadInput {
		t.Errorf("an unknown format: exit %d, %q", code, errOut)
	}
}

// TestWatchRedrawsOnlyOnChange: identical reads draw once, a changed one
// draws again, a change the cache reports is read at once (the interval
// here is an hour), and a cancelled context ends the watch without error.
func TestWatchRedrawsOnlyOnChange(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	changed := make(chan struct{}, 1)
	reads := 0
	views := []string{"a", "a", "a", "b", "b"}
	draw := func(w io.Writer) error {
		v := views[min(reads, len(views)-1)]
		reads++
		if reads == len(views) {
			cancel()
		} else {
			changed <- struct{}{} // the next read comes from a change, not the hour
		}
		_, err := fmt.Fprintln(w, "view "+v)
		return err
	}
	var out bytes.Buffer
	done := make(chan error, 1)
	go func() { done <- watch(ctx, &out, time.Hour, changed, draw) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("watch waited for its interval instead of the reported changes")
	}
	if got := strings.Count(out.String(), "\033[H\033[2J"); got != 2 {
		t.Errorf("%d redraws, want 2:\n%q", got, out.String())
	}
	if !strings.Contains(out.String(), "view a") || !strings.Contains(out.String(), "view b") {
		t.Errorf("output %q", out.String())
	}
}

func TestKubectlPluginName(t *testing.T) {
	for argv0, want := range map[string]string{
		"/usr/local/bin/kubectl-noderotation": "kubectl noderotation",
		"kubectl-noderotation.exe":            "kubectl noderotation",
		"./rotationctl":                       "rotationctl",
	} {
		if got := commandName(argv0); got != want {
			t.Errorf("commandName(%q) = %q, want %q", argv0, got, want)
		}
	}
}
