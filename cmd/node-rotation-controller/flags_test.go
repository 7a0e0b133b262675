package main

import (
	"errors"
	"flag"
	"slices"
	"strings"
	"testing"

	_ "github.com/noderotation/node-rotation-controller/internal/golden"
	"github.com/noderotation/node-rotation-controller/internal/version"
)

func TestFlags(t *testing.T) {
	o, err := parseFlags(nil)
	if err != nil || o.namespace != "node-rotation-system" || !o.leaderElect || !o.metricsSecure || o.logFormat != "json" || o.metricsAddr != ":8443" ||
		o.workers != 10 || o.apiQPS != 50 || o.apiBurst != 100 || o.maxConcurrent != 0 || !o.hostnamePref {
		t.Fatalf("defaults = %+v, %v", o, err)
	}
	if o.reconcilerConfig().SkipHostnamePreference {
		t.Error("the default configuration skips the hostname preference")
	}
	// the pre-pull no-op comes from this release's published image, or the
	// image the chart runs
	if got, want := o.reconcilerConfig().PrePullImage, "ghcr.io/noderotation/node-rotation-controller:"+version.Version(); got != want {
		t.Errorf("default pre-pull image %q, want %q", got, want)
	}
	if o, err := parseFlags([]string{"-prepull-image=mirror.example/nrc:1@sha256:abc", "-prepull-image-pull-secrets= regcred,,mirror "}); err != nil ||
		o.reconcilerConfig().PrePullImage != "mirror.example/nrc:1@sha256:abc" || !slices.Equal(o.reconcilerConfig().PrePullImagePullSecrets, []string{"regcred", "mirror"}) {
		t.Errorf("-prepull-image, -prepull-image-pull-secrets: %q %q, %v", o.reconcilerConfig().PrePullImage, o.reconcilerConfig().PrePullImagePullSecrets, err)
	}
	if s := o.reconcilerConfig().PrePullImagePullSecrets; s != nil {
		t.Errorf("default pre-pull pull secrets %q", s)
	}
	if o, err := parseFlags([]string{"-placeholder-hostname-preference=false", "-placeholder-image=m/p:1", "-max-concurrent-rotations=2"}); err != nil ||
		!o.reconcilerConfig().SkipHostnamePreference || o.reconcilerConfig().PlaceholderImage != "m/p:1" || o.reconcilerConfig().MaxConcurrentRotations != 2 {
		t.Errorf("-placeholder-hostname-preference=false: %+v, %v", o.reconcilerConfig(), err)
	}
	for args, want := range map[string]string{
		"-bogus":                       "flag provided but not defined: -bogus",
		"-log-format=xml":              `-log-format "xml": want json or text`,
		"-v=-1":                        "-v -1: must not be negative",
		"-namespace=":                  "-namespace must not be empty",
		"-placeholder-priority-class=": "-placeholder-priority-class must not be empty",
		"extra":                        `unexpected argument "extra"`,
		"-leader-elect=maybe":          "invalid boolean value",
		"-workers=0":                   "-workers 0: must be at least 1",
		"-max-concurrent-rotations=-1": "-max-concurrent-rotations -1: must not be negative (0 is no cap)",
		"-kube-api-qps=0":              "must be positive",
		"-kube-api-burst=0":            "must be positive",
	} {
		_, err := parseFlags(strings.Fields(args))
		if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v, want one line containing %q", args, err, want)
		}
	}
	if _, err := parseFlags([]string{"-h"}); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("-h: %v", err)
	}
	// --version wins over the checks: it prints and exits whatever else is set.
	for _, args := range [][]string{{"--version"}, {"-version"}, {"-workers=0", "--version"}} {
		if _, err := parseFlags(args); !errors.Is(err, errVersion) {
			t.Errorf("%v: %v, want the version", args, err)
		}
	}
}
