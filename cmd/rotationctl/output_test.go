package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

type row struct {
	NodePool string `json:"nodePool"`
	Gate     struct {
		Name string `json:"name"`
	} `json:"gate"`
}

func rows(names ...string) view {
	v := view{kind: "NodePool", render: func(w io.Writer, format string) error {
		fmt.Fprintf(w, "NODEPOOL  (%s)\n", format)
		for _, n := range names {
			fmt.Fprintln(w, n)
		}
		return nil
	}}
	for i, n := range names {
		r := row{NodePool: n}
		if i == 0 {
			r.Gate.Name = "windowClosed"
		}
		v.items, v.names = append(v.items, r), append(v.names, n)
	}
	return v
}

func withHeader(v view) view { v.header = true; return v }

func TestOutputFormats(t *testing.T) {
	for _, c := range []struct {
		o    outputFlags
		v    view
		want string
	}{
		{outputFlags{format: "table"}, rows("a", "b"), "NODEPOOL  (table)\na\nb\n"},
		{outputFlags{format: "wide", noHeaders: true}, withHeader(rows("a", "b")), "a\nb\n"},
		// explain's table has no header: its first line is a row
		{outputFlags{format: "table", noHeaders: true}, rows("a"), "NODEPOOL  (table)\na\n"},
		{outputFlags{format: "name"}, rows("a", "b"), "nodepool.karpenter.sh/a\nnodepool.karpenter.sh/b\n"},
		{outputFlags{format: "jsonpath={.items[*].nodePool}"}, rows("a", "b"), "a b"},
		{outputFlags{format: "jsonpath={.gate.name}"}, view{items: rows("a").items, single: true}, "windowClosed"},
		{outputFlags{format: "custom-columns=POOL:.nodePool,GATE:{.gate.name}"}, rows("a", "b"), "POOL   GATE\na      windowClosed\nb      <none>\n"},
		{outputFlags{format: "custom-columns=POOL:.nodePool", noHeaders: true}, rows("a", "b"), "a\nb\n"},
	} {
		if err := c.o.check(); err != nil {
			t.Errorf("-o %s: %v", c.o.format, err)
			continue
		}
		var buf bytes.Buffer
		if err := c.o.print(&buf, c.v); err != nil {
			t.Errorf("-o %s: %v", c.o.format, err)
		} else if buf.String() != c.want {
			t.Errorf("-o %s (no-headers %v):\n%q\nwant\n%q", c.o.format, c.o.noHeaders, buf.String(), c.want)
		}
	}
	for _, bad := range []string{"csv", "jsonpath=", "jsonpath={.items[", "custom-columns=POOL", "custom-columns="} {
		if err := (outputFlags{format: bad}).check(); err == nil {
			t.Errorf("-o %s: accepted", bad)
		}
	}
}

// kubectl's connection flags are there, -n is not (it would be kubectl's
// namespace, which nothing here reads): --controller-namespace is.
func TestKubectlConnectionFlags(t *testing.T) {
	for _, cmd := range []string{"status", "explain", "plan", "version"} {
		code, out, _ := runCLI(cmd, "--help")
		if code != 0 {
			t.Fatalf("%s --help: exit %d", cmd, code)
		}
		for _, flag := range []string{"--kubeconfig", "--context", "--cluster", "--user", "--as ", "--as-group", "--token", "--server", "--request-timeout", "--controller-namespace"} {
			if !strings.Contains(out, flag) {
				t.Errorf("%s --help lacks %s", cmd, strings.TrimSpace(flag))
			}
		}
		if strings.Contains(out, "-n, ") || strings.Contains(out, "--namespace") {
			t.Errorf("%s defines -n/--namespace", cmd)
		}
	}
	if code, _, errOut := runCLI("status", "-n", "x"); code != exitBadInput || !strings.Contains(errOut, "unknown shorthand flag: 'n'") {
		t.Errorf("status -n x: exit %d, %q", code, errOut)
	}
}

// A cluster that cannot be reached is one line naming the kubeconfig, the
// context and the server.
func TestUnreachableClusterIsOneLine(t *testing.T) {
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.WriteFile(kc, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: here, context: {cluster: c, user: u}}, {name: there, context: {cluster: c, user: u}}]
current-context: here
`), 0o600))
	for _, args := range [][]string{
		{"status", "--kubeconfig", kc},
		{"explain", "nodepool/x", "--kubeconfig", kc, "--context", "there"},
		{"version", "--kubeconfig", kc},
	} {
		code, _, errOut := runCLI(args...)
		ctxName := "here"
		if len(args) > 4 {
			ctxName = "there"
		}
		want := fmt.Sprintf("rotationctl: cannot reach the cluster at https://127.0.0.1:1 (kubeconfig %s, context %s): connection refused\n", kc, ctxName)
		if code != exitBadInput || errOut != want {
			t.Errorf("%v: exit %d, stderr\n%q\nwant\n%q", args, code, errOut, want)
		}
	}
}

func TestCompletion(t *testing.T) {
	// explain completes the kind without a cluster
	code, out, _ := runCLI("__complete", "explain", "--kubeconfig", "/nonexistent", "nodep")
	if code != 0 || !strings.HasPrefix(out, "nodepool/\n:6\n") { // NoSpace | NoFileComp
		t.Errorf("__complete explain nodep: exit %d, %q", code, out)
	}
	// no cluster: no names, and no file names either
	code, out, _ = runCLI("__complete", "status", "--kubeconfig", "/nonexistent", "")
	if code != 0 || !strings.HasPrefix(out, ":4\n") {
		t.Errorf("__complete status: exit %d, %q", code, out)
	}
}
