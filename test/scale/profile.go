//go:build scale

// Optional profiles of the controller (-profile-dir): where its memory and
// its CPU under churn go, read with `go tool pprof`.

package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"time"
)

// profiler fetches profiles from one controller run's pprof endpoint; nil
// (every method a no-op) when no profile directory was asked for.
type profiler struct {
	dir, label string
	port       int
}

func (b *bench) profiler(label string, port int) *profiler {
	if b.cfg.profileDir == "" {
		return nil
	}
	return &profiler{dir: b.cfg.profileDir, label: label, port: port}
}

// save writes /debug/pprof/<name> to <dir>/<label>-<file>.pprof; a failure
// is logged, never fatal, since the profile is an aside to the figures.
func (p *profiler) save(name, file string, query ...string) {
	if p == nil {
		return
	}
	q := "gc=1"
	if len(query) > 0 {
		q = query[0]
	}
	path := filepath.Join(p.dir, fmt.Sprintf("%s-%s.pprof", p.label, file))
	if err := p.fetch(fmt.Sprintf("http://127.0.0.1:%d/debug/pprof/%s?%s", p.port, name, q), path); err != nil {
		logf("%s: profile %s: %v", p.label, name, err)
		return
	}
	logf("%s: profile written to %s", p.label, path)
}

func (p *profiler) fetch(url, path string) error {
	if err := os.MkdirAll(p.dir, 0o755); err != nil {
		return err
	}
	resp, err := http.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", url, resp.Status)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// cpu starts a CPU profile over d in the background; the returned func
// waits for it to be written.
func (p *profiler) cpu(d time.Duration) func() {
	if p == nil {
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		p.save("profile", "cpu", fmt.Sprintf("seconds=%d", int(d.Seconds())))
	}()
	return func() { <-done }
}
