package main

import (
	"regexp"
	"strings"
	"testing"
)

var clientLine = regexp.MustCompile(`^Client: rotationctl \S+ \(go[^,]+, [a-z0-9]+/[a-z0-9]+\)\n`)

func TestVersionClientOnly(t *testing.T) {
	code, out, errOut := runCLI("version", "--client", "--kubeconfig", "/nonexistent")
	if code != 0 || !clientLine.MatchString(out) || strings.Contains(out, "Controller") || errOut != "" {
		t.Errorf("version --client: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

// Without a cluster the client's line is still printed, then the error.
func TestVersionWithoutACluster(t *testing.T) {
	code, out, errOut := runCLI("version", "--kubeconfig", "/nonexistent")
	if code == 0 || !clientLine.MatchString(out) || !strings.Contains(errOut, "/nonexistent") {
		t.Errorf("version: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}
