package apiproxy

import (
	"bufio"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// apiServer is a fake API server behind TLS: it records what reached it
// and answers each write 201 (or what status says), each read 200.
type apiServer struct {
	*httptest.Server
	mu       sync.Mutex
	received []string // "METHOD path auth"
	status   atomic.Int32
	watch    chan string // events the watch handler streams, one per line
}

func newAPIServer(t *testing.T) *apiServer {
	s := &apiServer{watch: make(chan string)}
	s.Server = httptest.NewTLSServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.received = append(s.received, r.Method+" "+r.URL.Path+" "+r.Header.Get("Authorization"))
		s.mu.Unlock()
		if r.URL.Query().Get("watch") == "true" {
			rw.WriteHeader(http.StatusOK)
			rw.(http.Flusher).Flush()
			for {
				select {
				case ev, ok := <-s.watch:
					if !ok {
						return
					}
					fmt.Fprintln(rw, ev)
					rw.(http.Flusher).Flush() // as the API server does per event
				case <-r.Context().Done():
					return
				}
			}
		}
		code := http.StatusOK
		if r.Method != http.MethodGet {
			code = http.StatusCreated
			if c := s.status.Load(); c != 0 {
				code = int(c)
			}
		}
		rw.Header().Set("Content-Type", "application/json")
		rw.WriteHeader(code)
		fmt.Fprintf(rw, `{"served":%q}`, r.Method+" "+r.URL.Path)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *apiServer) got() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.received...)
}

// start runs a proxy in front of s whose upstream credential is a bearer
// token, so a test can see the proxy — not its client — authenticates.
func start(t *testing.T, s *apiServer) *Proxy {
	t.Helper()
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.Certificate().Raw})
	p, err := Start(&rest.Config{Host: s.URL, BearerToken: "admin-token", TLSClientConfig: rest.TLSClientConfig{CAData: ca}}, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

func do(t *testing.T, method, url, body string) (*http.Response, string, error) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/merge-patch+json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b), nil
}

const anchorPatch = `{"metadata":{"annotations":{"noderotation.io/active-rotation":"a"}}}`

func TestForwardsWithTheProxysCredentialsAndRecordsWrites(t *testing.T) {
	s := newAPIServer(t)
	p := start(t, s)
	resp, body, err := do(t, "GET", p.URL()+"/api/v1/nodes", "")
	if err != nil || resp.StatusCode != 200 || body != `{"served":"GET /api/v1/nodes"}` {
		t.Fatalf("GET: %v %v %q", err, resp, body)
	}
	resp, _, err = do(t, "PATCH", p.URL()+"/apis/karpenter.sh/v1/nodepools/pool", anchorPatch)
	if err != nil || resp.StatusCode != 201 {
		t.Fatalf("PATCH: %v %v", err, resp)
	}
	if got := s.got(); len(got) != 2 || got[1] != "PATCH /apis/karpenter.sh/v1/nodepools/pool Bearer admin-token" {
		t.Errorf("upstream saw %q", got)
	}
	ws := p.Writes(0)
	if len(ws) != 1 || ws[0].Type != "PATCH nodepools +noderotation.io/active-rotation" || ws[0].Status != 201 || ws[0].Upstream != 201 || ws[0].Seq != 1 {
		t.Errorf("record %+v", ws)
	}
	if c := p.Counts(); c.Mutating != 1 || c.Targeted != 1 || c.Gets != 1 || c.Faults() != 0 {
		t.Errorf("counts %+v", c)
	}
	if p.Writes(1) != nil || p.Seq() != 1 {
		t.Errorf("Writes(1) = %v, Seq %d", p.Writes(1), p.Seq())
	}
}

// A watch event reaches the client while the stream stays open.
func TestWatchesStream(t *testing.T) {
	s := newAPIServer(t)
	p := start(t, s)
	resp, err := http.Get(p.URL() + "/api/v1/pods?watch=true")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	lines := bufio.NewReader(resp.Body)
	for _, ev := range []string{"ADDED a", "MODIFIED a"} {
		s.watch <- ev
		got := make(chan string, 1)
		go func() { l, _ := lines.ReadString('\n'); got <- l }()
		select {
		case l := <-got:
			if strings.TrimSpace(l) != ev {
				t.Fatalf("read %q, want %q", l, ev)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("event %q not delivered while the stream is open", ev)
		}
	}
	close(s.watch)
}

// The kill runs after the nth matching write was applied, before its client
// reads anything; the client's connection is aborted; it fires once.
func TestKillAfterTheNthAppliedWrite(t *testing.T) {
	s := newAPIServer(t)
	p := start(t, s)
	var kills atomic.Int32
	var upstreamAtKill int
	var reportedDuringKill, firedDuringKill bool
	p.KillAfter(OfType("PATCH nodepools +noderotation.io/active-rotation"), 2, func() {
		kills.Add(1)
		upstreamAtKill = len(s.got())
		_, reportedDuringKill = p.Killed()
		firedDuringKill = p.Fired()
	})
	url := p.URL() + "/apis/karpenter.sh/v1/nodepools/pool"

	// not matching: another type, and a matching write the server refused
	if resp, _, err := do(t, "DELETE", url, ""); err != nil || resp.StatusCode != 201 {
		t.Fatalf("DELETE: %v %v", err, resp)
	}
	s.status.Store(409)
	if resp, _, err := do(t, "PATCH", url, anchorPatch); err != nil || resp.StatusCode != 409 {
		t.Fatalf("refused PATCH: %v %v", err, resp)
	}
	s.status.Store(0)
	if resp, _, err := do(t, "PATCH", url, anchorPatch); err != nil || resp.StatusCode != 201 {
		t.Fatalf("first matching PATCH: %v %v", err, resp)
	}
	if _, ok := p.Killed(); ok || kills.Load() != 0 || p.Fired() {
		t.Fatal("killed before the second applied match")
	}
	resp, body, err := do(t, "PATCH", url, anchorPatch)
	if err == nil {
		t.Fatalf("the killed client read an answer: %d %q", resp.StatusCode, body)
	}
	// Settle waits for the kill function to return, which also orders its
	// writes to the variables above before the reads below.
	if w, ok := p.Settle(); !ok || w.Seq != 4 {
		t.Errorf("Settle() after the kill = %+v, %v; want the killed write", w, ok)
	}
	if kills.Load() != 1 || upstreamAtKill != 4 {
		t.Errorf("kills %d; upstream had %d requests at the kill, want 4 (the write applied first)", kills.Load(), upstreamAtKill)
	}
	w, ok := p.Killed()
	if !ok || !w.Killed || w.Seq != 4 || !w.Interrupted() {
		t.Errorf("Killed() = %+v, %v", w, ok)
	}
	if reportedDuringKill {
		t.Error("Killed() reported the kill before the kill function returned")
	}
	if !firedDuringKill || !p.Fired() {
		t.Errorf("Fired() during the kill %v, after it %v; want true from the applied write on", firedDuringKill, p.Fired())
	}
	// one-shot
	if resp, _, err := do(t, "PATCH", url, anchorPatch); err != nil || resp.StatusCode != 201 || kills.Load() != 1 {
		t.Errorf("after the kill: %v %v, kills %d", err, resp, kills.Load())
	}
	p.Disarm()
	if w, ok := p.Killed(); ok || p.Fired() {
		t.Errorf("Killed() after Disarm: %+v (fired %v)", w, p.Fired())
	}
	// re-armed: a new plan has not fired
	p.KillAfter(Any, 1, func() {})
	if p.Fired() {
		t.Error("Fired() right after KillAfter")
	}
}

// Settle waits for a kill that has chosen its write, and a kill not yet
// chosen never fires after it.
func TestSettleWaitsForAKillUnderWay(t *testing.T) {
	s := newAPIServer(t)
	p := start(t, s)
	entered, release := make(chan struct{}), make(chan struct{})
	p.KillAfter(Any, 1, func() { close(entered); <-release })
	go func() { _, _, _ = do(t, "POST", p.URL()+"/api/v1/namespaces/ns/pods", "{}") }()
	<-entered
	settled := make(chan bool)
	go func() { _, ok := p.Settle(); settled <- ok }()
	select {
	case <-settled:
		t.Fatal("Settle returned while the kill was still under way")
	case <-time.After(100 * time.Millisecond):
	}
	close(release)
	if !<-settled {
		t.Fatal("Settle did not report the kill it waited for")
	}

	p.KillAfter(Any, 1, func() { t.Error("a kill fired after Settle") })
	if _, ok := p.Settle(); ok {
		t.Error("Settle reported a kill that never fired")
	}
	if resp, _, err := do(t, "POST", p.URL()+"/api/v1/namespaces/ns/pods", "{}"); err != nil || resp.StatusCode != 201 {
		t.Fatalf("a write after Settle: %v %v", err, resp)
	}
}

// Background writes never fire a kill.
func TestKillIgnoresBackgroundWrites(t *testing.T) {
	s := newAPIServer(t)
	p := start(t, s)
	fired := false
	p.KillAfter(Any, 1, func() { fired = true })
	if resp, _, err := do(t, "POST", p.URL()+"/api/v1/namespaces/default/events", "{}"); err != nil || resp.StatusCode != 201 {
		t.Fatalf("event: %v %v", err, resp)
	}
	if fired {
		t.Fatal("an Event fired the kill")
	}
	p.Disarm()
	if _, _, err := do(t, "POST", p.URL()+"/api/v1/namespaces/ns/pods", "{}"); err != nil || fired {
		t.Fatalf("a disarmed plan fired (%v)", err)
	}
}

func TestFaults(t *testing.T) {
	cases := []struct {
		name       string
		faults     Faults
		wantStatus int
		forwarded  bool
		retryAfter string
	}{
		{"500 without forwarding", Faults{Fail500: 1}, 500, false, ""},
		{"429 with Retry-After, without forwarding", Faults{Throttle429: 1}, 429, false, "1"},
		{"applied, then 500", Faults{ApplyThen500: 1}, 500, true, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := newAPIServer(t)
			p := start(t, s)
			p.SetFaults(c.faults)
			resp, body, err := do(t, "PATCH", p.URL()+"/apis/karpenter.sh/v1/nodeclaims/c", anchorPatch)
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != c.wantStatus || resp.Header.Get("Retry-After") != c.retryAfter || !strings.Contains(body, `"kind":"Status"`) {
				t.Errorf("answer %d Retry-After %q %s", resp.StatusCode, resp.Header.Get("Retry-After"), body)
			}
			if forwarded := len(s.got()) == 1; forwarded != c.forwarded {
				t.Errorf("forwarded %v, want %v", forwarded, c.forwarded)
			}
			w := p.Writes(0)[0]
			if w.Status != c.wantStatus || (w.Upstream != 0) != c.forwarded || w.Fault == "" {
				t.Errorf("record %+v", w)
			}
			if w.Interrupted() != c.forwarded {
				t.Errorf("Interrupted() = %v for %s", w.Interrupted(), c.name)
			}
			if p.Counts().Faults() != 1 {
				t.Errorf("counts %+v", p.Counts())
			}
			// background writes and reads are never faulted
			if resp, _, err := do(t, "POST", p.URL()+"/api/v1/namespaces/default/events", "{}"); err != nil || resp.StatusCode != 201 {
				t.Errorf("an Event was faulted: %v %v", err, resp)
			}
			if resp, _, err := do(t, "GET", p.URL()+"/api/v1/nodes", ""); err != nil || resp.StatusCode != 200 {
				t.Errorf("a GET was faulted: %v %v", err, resp)
			}
		})
	}
}

// A write the API server refused is passed through, not counted as a fault.
func TestApplyThen500OnlyOnAppliedWrites(t *testing.T) {
	s := newAPIServer(t)
	p := start(t, s)
	p.SetFaults(Faults{ApplyThen500: 1})
	s.status.Store(409)
	resp, _, err := do(t, "PATCH", p.URL()+"/api/v1/nodes/n", anchorPatch)
	if err != nil || resp.StatusCode != 409 {
		t.Fatalf("%v %v", err, resp)
	}
	if c := p.Counts(); c.Faults() != 0 || p.Writes(0)[0].Fault != "" {
		t.Errorf("a refused write counted as a fault: %+v %+v", c, p.Writes(0))
	}
}

// Each share is injected exactly, up to one, whatever the seed; one seed
// gives one placement, another seed another.
func TestFaultSharesAreExactAndSeeded(t *testing.T) {
	run := func(seed uint64) (string, Counts) {
		s := newAPIServer(t)
		p := start(t, s)
		p.SetFaults(Faults{Seed: seed, Fail500: 0.1, Throttle429: 0.05, ApplyThen500: 0.05})
		for i := 0; i < 400; i++ {
			if _, _, err := do(t, "DELETE", p.URL()+"/api/v1/namespaces/ns/pods/p", ""); err != nil {
				t.Fatal(err)
			}
		}
		var got []Fault
		for _, w := range p.Writes(0) {
			got = append(got, w.Fault)
		}
		return fmt.Sprint(got), p.Counts()
	}
	a, ca := run(7)
	b, _ := run(7)
	c, cc := run(8)
	if a != b {
		t.Error("one seed, two placements")
	}
	if a == c {
		t.Error("two seeds, one placement")
	}
	for _, counts := range []Counts{ca, cc} {
		if d := counts.Fail500 - 40; d < -1 || d > 1 {
			t.Errorf("500s %d of 400 writes, want 40±1", counts.Fail500)
		}
		if d := counts.Throttle429 - 20; d < -1 || d > 1 {
			t.Errorf("429s %d of 400 writes, want 20±1", counts.Throttle429)
		}
		if d := counts.ApplyThen500 - 20; d < -1 || d > 1 {
			t.Errorf("apply-then-500s %d of 400 writes, want 20±1", counts.ApplyThen500)
		}
	}
}

func TestDelaysGetsButNotWatches(t *testing.T) {
	s := newAPIServer(t)
	p := start(t, s)
	p.SetFaults(Faults{DelayGets: 1, Delay: 300 * time.Millisecond})
	t0 := time.Now()
	if _, _, err := do(t, "GET", p.URL()+"/api/v1/nodes/n", ""); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(t0); d < 300*time.Millisecond {
		t.Errorf("GET answered after %s, want the delay", d)
	}
	t0 = time.Now()
	resp, err := http.Get(p.URL() + "/api/v1/pods?watch=true")
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(t0); d >= 300*time.Millisecond {
		t.Errorf("the watch waited %s", d)
	}
	resp.Body.Close()
	close(s.watch)
	if c := p.Counts(); c.DelayedGets != 1 || c.Gets != 1 {
		t.Errorf("counts %+v", c)
	}
}

// A client built from the proxy's kubeconfig reaches the API server.
func TestKubeconfig(t *testing.T) {
	s := newAPIServer(t)
	p := start(t, s)
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := p.WriteKubeconfig(path); err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Host != p.URL() || cfg.BearerToken != "" || len(cfg.CertData) != 0 {
		t.Errorf("config %+v", cfg)
	}
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := hc.Get(cfg.Host + "/version")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("%v %v", err, resp)
	}
	resp.Body.Close()
	if got := s.got(); len(got) != 1 || got[0] != "GET /version Bearer admin-token" {
		t.Errorf("upstream saw %q", got)
	}
}

// An unreachable API server is a 502 recorded against the write.
func TestUpstreamDown(t *testing.T) {
	s := newAPIServer(t)
	p := start(t, s)
	s.Close()
	resp, _, err := do(t, "DELETE", p.URL()+"/api/v1/namespaces/ns/pods/p", "")
	if err != nil || resp.StatusCode != http.StatusBadGateway {
		t.Fatalf("%v %v", err, resp)
	}
	if w := p.Writes(0)[0]; w.Status != http.StatusBadGateway || w.Applied() {
		t.Errorf("record %+v", w)
	}
}
