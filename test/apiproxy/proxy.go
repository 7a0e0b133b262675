// Package apiproxy is a test-only reverse proxy in front of kube-apiserver,
// on loopback, for the chaos suites (docs/test-world.md#chaos-suites-testchaos).
// The controller under test talks plain HTTP to the proxy with no
// credentials; the proxy forwards over TLS with the cluster admin's client
// certificate. On the way it classifies and records every mutating request
// by write type, can run a kill function right after the Nth matching write
// was applied — before its client reads the answer — and can inject API
// faults: a share of writes refused with 500 or 429, or applied and then
// answered 500, and a share of reads delayed.
package apiproxy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Fault is an injected API fault.
type Fault string

const (
	// Fault500 answers 500 without forwarding: the write did not happen.
	Fault500 Fault = "500"
	// Fault429 answers 429 with Retry-After: 1 without forwarding.
	Fault429 Fault = "429"
	// FaultApplyThen500 forwards the write and answers 500 once the API
	// server applied it: the write happened, its client thinks it did not.
	FaultApplyThen500 Fault = "apply-then-500"
)

// Faults configures injection. Fail500, Throttle429 and ApplyThen500 are
// shares in [0, 1] of the targeted (non-background) mutating requests,
// injected exactly (up to one) at seeded-random places; DelayGets is the
// probability that a non-watch GET waits Delay first.
type Faults struct {
	Seed         uint64 // the draws are reproducible for one request order
	Fail500      float64
	Throttle429  float64
	ApplyThen500 float64
	DelayGets    float64
	Delay        time.Duration
}

// Counts are what the proxy saw and injected.
type Counts struct {
	Mutating     int // every mutating request, background included
	Targeted     int // mutating requests eligible for kills and faults
	Gets         int // non-watch GETs
	Fail500      int
	Throttle429  int
	ApplyThen500 int // applied upstream, then answered 500
	DelayedGets  int
}

// Faults is the number of mutating requests a fault was injected into.
func (c Counts) Faults() int { return c.Fail500 + c.Throttle429 + c.ApplyThen500 }

func (c Counts) String() string {
	share := 0.0
	if c.Targeted > 0 {
		share = 100 * float64(c.Faults()) / float64(c.Targeted)
	}
	return fmt.Sprintf("writes=%d targeted=%d faults=%d (%.1f%%: 500=%d 429=%d apply-then-500=%d) gets=%d delayed-gets=%d",
		c.Mutating, c.Targeted, c.Faults(), share, c.Fail500, c.Throttle429, c.ApplyThen500, c.Gets, c.DelayedGets)
}

// Proxy is a running proxy.
type Proxy struct {
	upstream *url.URL
	rp       *httputil.ReverseProxy
	srv      *http.Server
	addr     string

	mu     sync.Mutex
	writes []Write
	plan   *killPlan
	killed *Write
	// firing is made when the armed kill chooses its write and closed
	// when the kill function has returned; nil while none was chosen.
	firing    chan struct{}
	faults    Faults
	rng       *rand.Rand
	schedules []*schedule
	drawn     int // targeted writes since SetFaults
	counts    Counts
}

type killPlan struct {
	match func(Write) bool
	n     int // matching applied writes still to see before the kill
	kill  func()
}

// call is the proxy's state of one request, carried in its context from
// the handler to the response hooks.
type call struct {
	index int   // into Proxy.writes; -1 for a read
	fault Fault // planned for this write
}

type callKey struct{}

var errKilled = errors.New("apiproxy: client killed after the write was applied")

// Start listens on addr (127.0.0.1:0 when empty) and forwards to the API
// server cfg names, authenticated as cfg is.
func Start(cfg *rest.Config, addr string) (*Proxy, error) {
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	upstream, err := url.Parse(cfg.Host)
	if err != nil {
		return nil, fmt.Errorf("apiproxy: API server address %q: %w", cfg.Host, err)
	}
	if upstream.Scheme == "" {
		// rest.Config allows a bare host:port; such a server speaks TLS
		upstream, err = url.Parse("https://" + cfg.Host)
		if err != nil {
			return nil, fmt.Errorf("apiproxy: API server address %q: %w", cfg.Host, err)
		}
	}
	transport, err := rest.TransportFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("apiproxy: a transport for %s: %w", cfg.Host, err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("apiproxy: listening on %s: %w", addr, err)
	}
	p := &Proxy{upstream: upstream, addr: ln.Addr().String(), rng: rand.New(rand.NewPCG(0, 0))}
	p.rp = &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(upstream)
			pr.Out.Host = upstream.Host
		},
		Transport: transport,
		// Watches are long-lived streams: every event is flushed at once,
		// or the controller's informers would see them late. (ReverseProxy
		// already does so for a body without Content-Length; -1 makes it
		// hold for every response.)
		FlushInterval:  -1,
		ModifyResponse: p.modifyResponse,
		ErrorHandler:   p.errorHandler,
	}
	p.srv = &http.Server{Handler: p, ReadHeaderTimeout: 30 * time.Second}
	go func() { _ = p.srv.Serve(ln) }()
	return p, nil
}

// URL is the proxy's address, http://127.0.0.1:<port>.
func (p *Proxy) URL() string { return "http://" + p.addr }

// WriteKubeconfig writes a kubeconfig for the proxy (no credentials: the
// proxy holds them) to path.
func (p *Proxy) WriteKubeconfig(path string) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["apiproxy"] = &clientcmdapi.Cluster{Server: p.URL()}
	cfg.AuthInfos["apiproxy"] = &clientcmdapi.AuthInfo{}
	cfg.Contexts["apiproxy"] = &clientcmdapi.Context{Cluster: "apiproxy", AuthInfo: "apiproxy"}
	cfg.CurrentContext = "apiproxy"
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return fmt.Errorf("apiproxy: writing kubeconfig %s: %w", path, err)
	}
	return nil
}

// Close stops the proxy and drops every connection, watches included.
func (p *Proxy) Close() error { return p.srv.Close() }

// KillAfter arms a one-shot kill: once the nth write matching match (and
// not background) from now on has been applied upstream, kill runs — before
// the answer is written to the client — and the client's connection is then
// aborted, so the client never learns the outcome. It replaces an armed plan.
func (p *Proxy) KillAfter(match func(Write) bool, n int, kill func()) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.plan = &killPlan{match: match, n: n, kill: kill}
	p.killed, p.firing = nil, nil
}

// Disarm drops an armed kill that has not fired, and forgets one that
// has: Killed reports nothing until the next KillAfter fires.
func (p *Proxy) Disarm() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.plan, p.killed, p.firing = nil, nil, nil
}

// Settle drops the armed kill, so none fires from now on, waits for one
// that already chose its write to finish, and reports it as Killed does.
// A caller that ends a kill's scope with Settle cannot miss a kill that
// lands just as it decides the scope is over.
func (p *Proxy) Settle() (Write, bool) {
	p.mu.Lock()
	p.plan = nil
	firing := p.firing
	p.mu.Unlock()
	if firing != nil {
		<-firing
	}
	return p.Killed()
}

// Fired reports that the armed kill has chosen its write: once the
// write's answer has reached the proxy — before the kill function runs, so
// before Killed reports it. A caller that watches the cluster sees the
// write's effect while the kill is still under way (and, for the moment
// the answer takes to come back, before Fired says so: Settle closes that
// gap); Fired is how it knows a kill is coming and waits for Killed.
func (p *Proxy) Fired() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.firing != nil
}

// Killed returns the write the armed kill fired after, once the kill
// function has returned.
func (p *Proxy) Killed() (Write, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.killed == nil {
		return Write{}, false
	}
	return *p.killed, true
}

// SetFaults replaces the fault configuration and reseeds the draws; the
// zero Faults turns injection off.
func (p *Proxy) SetFaults(f Faults) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.faults = f
	p.rng = rand.New(rand.NewPCG(f.Seed, f.Seed^0x9e3779b97f4a7c15))
	p.schedules, p.drawn = nil, 0
	for _, k := range []struct {
		kind  Fault
		share float64
	}{{Fault500, f.Fail500}, {Fault429, f.Throttle429}, {FaultApplyThen500, f.ApplyThen500}} {
		if k.share > 0 {
			s := &schedule{kind: k.kind, share: min(k.share, 1)}
			s.next(p.rng)
			p.schedules = append(p.schedules, s)
		}
	}
}

// Counts returns what the proxy saw and injected so far.
func (p *Proxy) Counts() Counts {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.counts
}

// Writes returns the record of every mutating request with Seq > after.
func (p *Proxy) Writes(after int) []Write {
	p.mu.Lock()
	defer p.mu.Unlock()
	if after < 0 {
		after = 0
	}
	if after >= len(p.writes) {
		return nil
	}
	return append([]Write(nil), p.writes[after:]...)
}

// Seq is the Seq of the latest mutating request (0 before the first).
func (p *Proxy) Seq() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.writes)
}

// OfType matches writes of one write type.
func OfType(t string) func(Write) bool { return func(w Write) bool { return w.Type == t } }

// Any matches every targeted write.
func Any(Write) bool { return true }

func (p *Proxy) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	if !mutating(r.Method) {
		p.serveRead(rw, r)
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(rw, fmt.Sprintf("apiproxy: reading the request body: %v", err), http.StatusBadRequest)
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	w := Classify(r.Method, r.URL, r.Header.Get("Content-Type"), body)
	w.Time = time.Now()

	p.mu.Lock()
	w.Seq = len(p.writes) + 1
	p.counts.Mutating++
	var fault Fault
	if !w.Background {
		p.counts.Targeted++
		fault = p.drawLocked(p.drawn)
		p.drawn++
	}
	switch fault {
	case Fault500:
		p.counts.Fail500++
	case Fault429:
		p.counts.Throttle429++
	}
	w.Fault = fault
	c := &call{index: len(p.writes), fault: fault}
	p.writes = append(p.writes, w)
	p.mu.Unlock()

	switch fault {
	case Fault500:
		p.finish(c, http.StatusInternalServerError, 0)
		writeStatus(rw, http.StatusInternalServerError, "InternalError", "apiproxy: injected fault (not forwarded)")
		return
	case Fault429:
		p.finish(c, http.StatusTooManyRequests, 0)
		rw.Header().Set("Retry-After", "1")
		writeStatus(rw, http.StatusTooManyRequests, "TooManyRequests", "apiproxy: injected throttling (not forwarded)")
		return
	}
	p.rp.ServeHTTP(rw, r.WithContext(context.WithValue(r.Context(), callKey{}, c)))
}

// serveRead forwards a read, after the configured delay for a drawn share
// of non-watch GETs.
func (p *Proxy) serveRead(rw http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet && !isWatch(r) {
		p.mu.Lock()
		p.counts.Gets++
		var delay time.Duration
		if p.faults.DelayGets > 0 && p.faults.Delay > 0 && p.rng.Float64() < p.faults.DelayGets {
			p.counts.DelayedGets++
			delay = p.faults.Delay
		}
		p.mu.Unlock()
		if delay > 0 {
			t := time.NewTimer(delay)
			select {
			case <-t.C:
			case <-r.Context().Done():
				t.Stop()
				return
			}
		}
	}
	p.rp.ServeHTTP(rw, r.WithContext(context.WithValue(r.Context(), callKey{}, &call{index: -1})))
}

func isWatch(r *http.Request) bool {
	if w := r.URL.Query().Get("watch"); w == "true" || w == "1" {
		return true
	}
	return strings.Contains(r.URL.Path, "/watch/")
}

// schedule places one fault kind's injections: jittered systematic
// sampling, so after i targeted writes exactly ⌊i·share⌋ or ⌈i·share⌉
// were planned — a run faults the share it asked for, not a share that
// wanders with a short run's luck — while the seed decides where in each
// 1/share-wide slot each injection falls.
type schedule struct {
	kind  Fault
	share float64
	done  int // injections placed so far
	due   int // the targeted write (0-based) at which the next is due
}

func (s *schedule) next(rng *rand.Rand) {
	s.due = int((float64(s.done) + rng.Float64()) / s.share)
}

// drawLocked picks the fault for the targeted write with 0-based index i.
// Two kinds due at the same write: the later one waits for the next.
func (p *Proxy) drawLocked(i int) Fault {
	for _, s := range p.schedules {
		if i >= s.due {
			s.done++
			s.next(p.rng)
			return s.kind
		}
	}
	return ""
}

// modifyResponse sees the API server's answer to a forwarded request
// before its client does: it fires an armed kill, or turns an applied
// write into a 500.
func (p *Proxy) modifyResponse(resp *http.Response) error {
	c, _ := resp.Request.Context().Value(callKey{}).(*call)
	if c == nil || c.index < 0 {
		return nil
	}
	applied := resp.StatusCode >= 200 && resp.StatusCode < 300
	p.mu.Lock()
	w := &p.writes[c.index]
	w.Upstream, w.Status = resp.StatusCode, resp.StatusCode
	var kill func()
	var firing chan struct{}
	if applied && !w.Background && p.plan != nil && p.plan.match(*w) {
		p.plan.n--
		if p.plan.n <= 0 {
			kill, p.plan, firing = p.plan.kill, nil, make(chan struct{})
			w.Killed, p.firing = true, firing
		}
	}
	if kill == nil && c.fault == FaultApplyThen500 {
		if applied {
			p.counts.ApplyThen500++
			w.Status = http.StatusInternalServerError
		} else {
			w.Fault = "" // not applied: the client gets the real answer
		}
	}
	p.mu.Unlock()

	if kill != nil {
		// The kill runs while the answer is held here: the client dies
		// with the write applied and unanswered. Killed reports it only
		// once the kill function has returned.
		kill()
		p.mu.Lock()
		k := p.writes[c.index]
		p.killed = &k
		close(firing) // this kill's, whatever was armed since
		p.mu.Unlock()
		return errKilled
	}
	if c.fault == FaultApplyThen500 && applied {
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		b := statusBody(http.StatusInternalServerError, "InternalError", "apiproxy: injected fault (the write was applied)")
		resp.StatusCode, resp.Status = http.StatusInternalServerError, "500 Internal Server Error"
		resp.Header = http.Header{"Content-Type": {"application/json"}, "Content-Length": {strconv.Itoa(len(b))}}
		resp.ContentLength = int64(len(b))
		resp.Body = io.NopCloser(bytes.NewReader(b))
	}
	return nil
}

// errorHandler answers a request the upstream round trip failed for, and
// aborts the connection of a killed client.
func (p *Proxy) errorHandler(rw http.ResponseWriter, r *http.Request, err error) {
	if errors.Is(err, errKilled) {
		// the server recovers this panic and closes the connection
		// without a response
		panic(http.ErrAbortHandler)
	}
	if c, _ := r.Context().Value(callKey{}).(*call); c != nil && c.index >= 0 {
		p.finish(c, http.StatusBadGateway, 0)
	}
	if r.Context().Err() != nil {
		return // the client went away (a watch closed): nobody to answer
	}
	writeStatus(rw, http.StatusBadGateway, "InternalError", fmt.Sprintf("apiproxy: upstream: %v", err))
}

func (p *Proxy) finish(c *call, status, upstream int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.writes[c.index].Status, p.writes[c.index].Upstream = status, upstream
}

func statusBody(code int, reason, msg string) []byte {
	return fmt.Appendf(nil, `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":%q,"reason":%q,"code":%d}`, msg, reason, code)
}

func writeStatus(rw http.ResponseWriter, code int, reason, msg string) {
	b := statusBody(code, reason, msg)
	rw.Header().Set("Content-Type", "application/json")
	rw.Header().Set("Content-Length", strconv.Itoa(len(b)))
	rw.WriteHeader(code)
	_, _ = rw.Write(b)
}
