package rotation_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
)

// requestLog records every request the controller instances send to the
// API server (method, path, query), so a spec can count what one rotation
// cost: the reads its writes needed and the writes themselves.
type requestLog struct {
	mu   sync.Mutex
	reqs []sentRequest
}

type sentRequest struct {
	instance string
	method   string
	path     string
	query    url.Values
	status   int // 0 when the request failed without an answer
}

var controllerRequests = &requestLog{}

// wrap returns a rest.Config WrapTransport that records each request of
// one instance with the status it was answered with.
func (l *requestLog) wrap(instance string) func(http.RoundTripper) http.RoundTripper {
	return func(rt http.RoundTripper) http.RoundTripper {
		return roundTripper(func(r *http.Request) (*http.Response, error) {
			resp, err := rt.RoundTrip(r)
			sent := sentRequest{instance: instance, method: r.Method, path: r.URL.Path, query: r.URL.Query()}
			if resp != nil {
				sent.status = resp.StatusCode
			}
			l.mu.Lock()
			l.reqs = append(l.reqs, sent)
			l.mu.Unlock()
			return resp, err
		})
	}
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// mark returns the position of the next request, to count from.
func (l *requestLog) mark() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.reqs)
}

// touching returns the requests since mark whose path names one of the
// objects (".../nodepools/NAME", ".../nodes/NAME", ".../pods/NAME"), or
// that list Pods on one of the nodes (a spec.nodeName field selector).
// Watches are the cache's and are not counted.
func (l *requestLog) touching(mark int, names ...string) []sentRequest {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []sentRequest
	for _, r := range l.reqs[mark:] {
		if r.query.Get("watch") == "true" {
			continue
		}
		for _, n := range names {
			if strings.HasSuffix(r.path, "/"+n) || r.query.Get("fieldSelector") == "spec.nodeName="+n {
				out = append(out, r)
				break
			}
		}
	}
	return out
}

// readsByInstance counts each instance's reads (GETs, lists included).
func readsByInstance(rs []sentRequest) map[string]int {
	m := map[string]int{}
	for _, r := range rs {
		if r.method == http.MethodGet {
			m[r.instance]++
		}
	}
	return m
}

// landedWrites counts the writes the API server accepted (2xx); refused
// writes (a 409 on a stale copy) are counted by refusedWrites.
func landedWrites(rs []sentRequest) (n int) {
	for _, r := range rs {
		if r.method != http.MethodGet && r.status/100 == 2 {
			n++
		}
	}
	return n
}

func refusedWrites(rs []sentRequest) (n int) {
	for _, r := range rs {
		if r.method != http.MethodGet && r.status == http.StatusConflict {
			n++
		}
	}
	return n
}

func describe(rs []sentRequest) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = fmt.Sprintf("%s %s %s", r.instance, r.method, r.path)
		if fs := r.query.Get("fieldSelector"); fs != "" {
			out[i] += "?fieldSelector=" + fs
		}
		out[i] += fmt.Sprintf(" → %d", r.status)
	}
	return out
}
