package claimwatch

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	restclientwatch "k8s.io/client-go/rest/watch"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/flowcontrol"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/noderotation/node-rotation-controller/internal/scheme"
)

// claimJSON is a NodeClaim as Karpenter's kwok provider writes it, read
// back with its managedFields from the benchmark's cluster
// (make bench-scale).
func claimJSON(t testing.TB) map[string]any {
	t.Helper()
	b, err := os.ReadFile("testdata/nodeclaim.json")
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// eventJSON is a watch event as the API server writes it: the type first.
func eventJSON(t testing.TB, typ watch.EventType, obj any) []byte {
	t.Helper()
	b, err := json.Marshal(struct {
		Type   watch.EventType `json:"type"`
		Object any             `json:"object"`
	}{typ, obj})
	if err != nil {
		t.Fatal(err)
	}
	return append(b, '\n')
}

// eventJSONObjectFirst is a watch event with its object before its type,
// which JSON allows and the API server does not write.
func eventJSONObjectFirst(t testing.TB, typ watch.EventType, obj any) []byte {
	t.Helper()
	b, err := json.Marshal(map[string]any{"type": typ, "object": obj}) // keys sorted
	if err != nil {
		t.Fatal(err)
	}
	return append(b, '\n')
}

// stream is a watch body exercising every event type: the recorded claim
// added, modified (a label, a condition and the resourceVersion changed),
// a bookmark ending the initial events, the claim deleted, and an ERROR
// with the API server's 410.
func stream(t testing.TB, encode func(testing.TB, watch.EventType, any) []byte) []byte {
	added := claimJSON(t)
	modified := claimJSON(t)
	md := modified["metadata"].(map[string]any)
	md["resourceVersion"] = "99999"
	md["labels"].(map[string]any)["extra"] = "x"
	st := modified["status"].(map[string]any)
	st["conditions"] = append(st["conditions"].([]any), map[string]any{"type": "Drifted", "status": "True", "reason": "Drifted", "message": "", "lastTransitionTime": "2026-12-01T16:30:00Z"})
	// Keys match fields case-sensitively, as in client-go: these are
	// unknown fields, not the node name and the labels.
	st["NodeName"], md["Labels"] = "not-the-node", map[string]any{"not": "a-label"}
	st["ProviderId"] = "not://the-provider" // no "providerID" key in the claim's status to write over it
	delete(st, "providerID")
	bookmark := map[string]any{"apiVersion": "karpenter.sh/v1", "kind": "NodeClaim", "metadata": map[string]any{
		"resourceVersion": "100000", "annotations": map[string]any{metav1.InitialEventsAnnotationKey: "true"}}}
	// The reflector reads the details (a resourceVersion too large) and
	// the status's resourceVersion.
	expired := metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, ListMeta: metav1.ListMeta{ResourceVersion: "100000"},
		Status: metav1.StatusFailure, Message: "too old resource version: 1 (100000)", Reason: metav1.StatusReasonExpired, Code: http.StatusGone,
		Details: &metav1.StatusDetails{Kind: "nodeclaims", Causes: []metav1.StatusCause{{Type: metav1.CauseTypeResourceVersionTooLarge, Message: "too large"}}, RetryAfterSeconds: 3}}
	var b bytes.Buffer
	for _, e := range [][]byte{
		encode(t, watch.Added, added), encode(t, watch.Modified, modified), encode(t, watch.Bookmark, bookmark),
		encode(t, watch.Deleted, modified), encode(t, watch.Error, expired),
	} {
		b.Write(e)
	}
	return b.Bytes()
}

// server answers every NodeClaim watch with body and records the query
// each request carried.
type server struct {
	*httptest.Server
	mu      sync.Mutex
	queries []url.Values
	accepts []string
}

func newServer(t *testing.T, status int, body []byte) *server {
	s := &server{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/apis/karpenter.sh/v1/nodeclaims" {
			http.NotFound(w, r)
			return
		}
		s.mu.Lock()
		s.queries = append(s.queries, r.URL.Query())
		s.accepts = append(s.accepts, r.Header.Get("Accept"))
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = w.Write(body)
	}))
	t.Cleanup(s.Close)
	return s
}

// clientGoWatch is the watch the cache would open without this package.
func clientGoWatch(t *testing.T, host string, opts metav1.ListOptions) (watch.Interface, error) {
	s, err := scheme.New()
	if err != nil {
		t.Fatal(err)
	}
	cfg := &rest.Config{Host: host, APIPath: "/apis", ContentConfig: rest.ContentConfig{
		GroupVersion:         &schema.GroupVersion{Group: "karpenter.sh", Version: "v1"},
		NegotiatedSerializer: serializer.NewCodecFactory(s).WithoutConversion(),
	}}
	rc, err := rest.RESTClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	opts.Watch = true
	return rc.Get().Resource("nodeclaims").VersionedParams(&opts, runtime.NewParameterCodec(s)).Watch(context.Background())
}

func ourWatch(t *testing.T, host string, opts metav1.ListOptions) (watch.Interface, error) {
	w, err := New(&rest.Config{Host: host})
	if err != nil {
		t.Fatal(err)
	}
	return w.Watch(context.Background(), opts)
}

func drain(t *testing.T, w watch.Interface) []watch.Event {
	t.Helper()
	var out []watch.Event
	timeout := time.After(10 * time.Second)
	for {
		select {
		case e, ok := <-w.ResultChan():
			if !ok {
				return out
			}
			out = append(out, e)
		case <-timeout:
			w.Stop()
			t.Fatalf("the watch did not end; %d events so far", len(out))
		}
	}
}

// withoutSkipped drops from a client-go decoded claim exactly what the
// decoder skips (Skipped).
func withoutSkipped(o runtime.Object) runtime.Object {
	c, ok := o.(*karpv1.NodeClaim)
	if !ok {
		return o
	}
	c = c.DeepCopy()
	c.ManagedFields, c.Spec.Resources, c.Status.Capacity, c.Status.ImageID = nil, karpv1.ResourceRequirements{}, nil, ""
	return c
}

// bothDecode serves body as a watch to client-go's watch and to this
// package's, and returns the events of each.
func bothDecode(t *testing.T, body []byte) (clientGo, ours []watch.Event) {
	t.Helper()
	srv := newServer(t, http.StatusOK, body)
	for _, open := range []func(*testing.T, string, metav1.ListOptions) (watch.Interface, error){clientGoWatch, ourWatch} {
		w, err := open(t, srv.URL, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if clientGo == nil {
			clientGo = append([]watch.Event{}, drain(t, w)...)
		} else {
			ours = append([]watch.Event{}, drain(t, w)...)
		}
	}
	return clientGo, ours
}

func TestDecodesEveryEventAsClientGoDoes(t *testing.T) {
	for name, encode := range map[string]func(testing.TB, watch.EventType, any) []byte{
		"the API server's order": eventJSON, "the object first": eventJSONObjectFirst,
	} {
		t.Run(name, func(t *testing.T) { decodesEveryEventAsClientGoDoes(t, stream(t, encode)) })
	}
}

func decodesEveryEventAsClientGoDoes(t *testing.T, body []byte) {
	want, got := bothDecode(t, body)
	if len(want) != 5 {
		t.Fatalf("client-go decoded %d events of 5: %v", len(want), want)
	}
	if len(got) != len(want) {
		t.Fatalf("%d events, client-go %d: %v", len(got), len(want), got)
	}
	for i := range want {
		if got[i].Type != want[i].Type {
			t.Errorf("event %d: type %s, client-go %s", i, got[i].Type, want[i].Type)
		}
		if d := cmp.Diff(withoutSkipped(want[i].Object), got[i].Object); d != "" {
			t.Errorf("event %d (%s): object differs from client-go's without %v (-client-go +ours):\n%s", i, want[i].Type, Skipped, d)
		}
	}
	// The decoder did skip: client-go's first claim has the fields.
	if c := want[0].Object.(*karpv1.NodeClaim); len(c.ManagedFields) == 0 || len(c.Status.Capacity) == 0 || len(c.Spec.Resources.Requests) == 0 {
		t.Fatalf("the fixture lacks a skipped field, so the comparison proves nothing: %d managedFields, capacity %v, requests %v",
			len(c.ManagedFields), c.Status.Capacity, c.Spec.Resources.Requests)
	}
	if s, ok := got[4].Object.(*metav1.Status); !ok || !apierrors.IsResourceExpired(apierrors.FromObject(s)) {
		t.Errorf("the ERROR event's object is %#v, not the 410 Expired status", got[4].Object)
	}
}

func TestSendsTheRequestClientGoSends(t *testing.T) {
	srv := newServer(t, http.StatusOK, nil)
	timeout := int64(321)
	opts := metav1.ListOptions{ResourceVersion: "42", TimeoutSeconds: &timeout, AllowWatchBookmarks: true,
		SendInitialEvents: new(bool), ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan}
	*opts.SendInitialEvents = true
	for _, open := range []func(*testing.T, string, metav1.ListOptions) (watch.Interface, error){clientGoWatch, ourWatch} {
		w, err := open(t, srv.URL, opts)
		if err != nil {
			t.Fatal(err)
		}
		drain(t, w)
	}
	if len(srv.queries) != 2 {
		t.Fatalf("%d requests", len(srv.queries))
	}
	if d := cmp.Diff(srv.queries[0], srv.queries[1]); d != "" {
		t.Errorf("query differs from client-go's (-client-go +ours):\n%s", d)
	}
	if srv.queries[1].Get("watch") != "true" || srv.queries[1].Get("sendInitialEvents") != "true" {
		t.Errorf("query %v", srv.queries[1])
	}
	if srv.accepts[1] != srv.accepts[0] || !strings.HasPrefix(srv.accepts[1], "application/json") {
		t.Errorf("Accept %q, client-go's %q", srv.accepts[1], srv.accepts[0])
	}
}

func TestARefusedWatchIsTheServersError(t *testing.T) {
	body, _ := json.Marshal(metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusFailure,
		Message: "too old resource version", Reason: metav1.StatusReasonExpired, Code: http.StatusGone})
	srv := newServer(t, http.StatusGone, body)
	_, err := ourWatch(t, srv.URL, metav1.ListOptions{ResourceVersion: "1"})
	if !apierrors.IsResourceExpired(err) {
		t.Fatalf("error %v (%T), not the 410 Expired status", err, err)
	}
}

func TestAnEventThatDoesNotDecodeEndsTheWatchAsClientGosDoes(t *testing.T) {
	whole := string(eventJSON(t, watch.Added, claimJSON(t)))
	for name, body := range map[string]string{
		"not JSON":              whole + `{"type":"MODIFIED","object":{"metadata":}}`,
		"an unknown type":       whole + `{"type":"CHANGED","object":{"kind":"NodeClaim"}}`,
		"a wrong field type":    whole + `{"type":"ADDED","object":{"kind":"NodeClaim","metadata":{"name":7}}}`,
		"a wrong status field":  whole + `{"type":"ADDED","object":{"kind":"NodeClaim","status":{"nodeName":["a"]}}}`,
		"cut mid-event":         whole + whole[:len(whole)/2],
		"an empty object":       whole + `{"type":"ADDED","object":{}}`,
		"no object":             whole + `{"type":"ADDED"}`,
		"no kind":               whole + `{"type":"ADDED","object":{"apiVersion":"karpenter.sh/v1","metadata":{"name":"n"}}}`,
		"an ERROR not a Status": whole + `{"type":"ERROR","object":{"kind":"NodeClaim","apiVersion":"karpenter.sh/v1","status":"Failure"}}`,
		"no apiVersion":         whole + `{"type":"ADDED","object":{"kind":"NodeClaim","metadata":{"name":"n"}}}`,
		"another version":       whole + `{"type":"ADDED","object":{"kind":"NodeClaim","apiVersion":"karpenter.sh/v1beta1","metadata":{"name":"n"}}}`,
	} {
		t.Run(name, func(t *testing.T) {
			want, got := bothDecode(t, []byte(body))
			if len(got) != len(want) {
				t.Fatalf("events %v, client-go's %v", got, want)
			}
			for i := range want {
				if got[i].Type != want[i].Type {
					t.Errorf("event %d: %s, client-go's %s", i, got[i].Type, want[i].Type)
				}
				if want[i].Type != watch.Error {
					continue
				}
				s, ok := got[i].Object.(*metav1.Status)
				if ws := want[i].Object.(*metav1.Status); !ok || s.Code != ws.Code || s.Reason != ws.Reason {
					t.Errorf("ERROR event %#v, client-go's %#v", got[i].Object, ws)
				}
			}
			if name != "cut mid-event" && (len(got) != 2 || got[1].Type != watch.Error) {
				t.Errorf("events %v, want the whole one and an ERROR", got)
			}
		})
	}
}

// BenchmarkDecodeEvent compares client-go's decoding of one NodeClaim
// MODIFIED event with this package's (docs/performance.md).
func BenchmarkDecodeEvent(b *testing.B) {
	ev := eventJSON(b, watch.Modified, claimJSON(b))
	s, err := scheme.New()
	if err != nil {
		b.Fatal(err)
	}
	codecs := serializer.NewCodecFactory(s).WithoutConversion()
	info, _ := runtime.SerializerInfoForMediaType(codecs.SupportedMediaTypes(), runtime.ContentTypeJSON)
	objectDecoder := codecs.DecoderToVersion(info.Serializer, schema.GroupVersion{Group: "karpenter.sh", Version: "v1"})
	b.Run("client-go", func(b *testing.B) {
		b.ReportAllocs()
		r := &repeat{ev: ev}
		d := restWatchDecoder(r, info, objectDecoder)
		for b.Loop() {
			if _, _, err := d.Decode(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("claimwatch", func(b *testing.B) {
		b.ReportAllocs()
		d := newDecoder(io.NopCloser(&repeat{ev: ev}))
		for b.Loop() {
			if _, _, err := d.Decode(); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// repeat reads as ev over and over.
type repeat struct {
	ev  []byte
	off int
}

func (r *repeat) Read(p []byte) (int, error) {
	k := copy(p, r.ev[r.off:])
	r.off = (r.off + k) % len(r.ev)
	return k, nil
}

// restWatchDecoder is the decoder client-go's Request.Watch reads a JSON
// watch stream with.
func restWatchDecoder(r io.Reader, info runtime.SerializerInfo, objectDecoder runtime.Decoder) watch.Decoder {
	frames := info.StreamSerializer.Framer.NewFrameReader(io.NopCloser(r))
	return restclientwatch.NewDecoder(streaming.NewDecoder(frames, info.StreamSerializer.Serializer), objectDecoder)
}

// An object of another kind in a NodeClaim watch ends the watch with an
// ERROR event (client-go would hand on an object the informer cannot
// store).
func TestAnotherKindEndsTheWatch(t *testing.T) {
	srv := newServer(t, http.StatusOK, []byte(`{"type":"ADDED","object":{"kind":"Node","apiVersion":"v1","metadata":{"name":"n"}}}`))
	w, err := ourWatch(t, srv.URL, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if events := drain(t, w); len(events) != 1 || events[0].Type != watch.Error {
		t.Fatalf("events %v, want one ERROR", events)
	}
}

// Opening a watch does not wait on the client's rate limiter, as
// client-go's watches do not: the workers' writes share that bucket.
func TestOpeningAWatchTakesNoToken(t *testing.T) {
	srv := newServer(t, http.StatusOK, nil)
	limiter := flowcontrol.NewTokenBucketRateLimiter(0.001, 1)
	limiter.Accept() // the bucket's one token, gone for the next 1,000 s
	w, err := New(&rest.Config{Host: srv.URL, RateLimiter: limiter})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	wi, err := w.Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("the watch waited on the rate limiter: %v", err)
	}
	drain(t, wi)
}

// A connection that ends before the server answers is tried again, 10
// more times as client-go's watch does, then gives an empty watch rather
// than an error; a connection that answers on a later try gives its
// events.
func TestAConnectionEndedAtOpenIsTriedAgain(t *testing.T) {
	for _, tc := range []struct {
		name          string
		failFor, want int
		events        int
	}{{"always", 1000, 11, 0}, {"twice", 2, 3, 1}} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			requests := 0
			body := eventJSON(t, watch.Added, claimJSON(t))
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				requests++
				n := requests
				mu.Unlock()
				if n <= tc.failFor {
					if conn, _, err := w.(http.Hijacker).Hijack(); err == nil {
						_ = conn.Close()
					}
					return
				}
				w.Header().Set("Content-Type", "application/json")
				_, _ = w.Write(body)
			}))
			t.Cleanup(srv.Close)
			w, err := New(&rest.Config{Host: srv.URL})
			if err != nil {
				t.Fatal(err)
			}
			w.openRetryWait = time.Millisecond
			wi, err := w.Watch(context.Background(), metav1.ListOptions{})
			if err != nil {
				t.Fatalf("error %v, want a watch", err)
			}
			if events := drain(t, wi); len(events) != tc.events {
				t.Errorf("events %v, want %d", events, tc.events)
			}
			if requests != tc.want {
				t.Errorf("%d requests, want %d", requests, tc.want)
			}
		})
	}
}

// A refused watch is not tried again: the reflector decides.
func TestARefusedWatchIsNotTriedAgain(t *testing.T) {
	srv := newServer(t, http.StatusForbidden, []byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Forbidden","code":403}`))
	if _, err := ourWatch(t, srv.URL, metav1.ListOptions{}); !apierrors.IsForbidden(err) || len(srv.queries) != 1 {
		t.Errorf("error %v after %d requests", err, len(srv.queries))
	}
}

// For NodeClaims the informer keeps the cache's list and watches through
// this package, with bookmarks; any other kind keeps the cache's
// ListerWatcher as it is.
func TestListWatchReplacesOnlyTheNodeClaimWatch(t *testing.T) {
	srv := newServer(t, http.StatusOK, nil)
	w, err := New(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	lists, watches := 0, 0
	base := &toolscache.ListWatch{
		ListWithContextFunc: func(context.Context, metav1.ListOptions) (runtime.Object, error) {
			lists++
			return &karpv1.NodeClaimList{}, nil
		},
		WatchFuncWithContext: func(context.Context, metav1.ListOptions) (watch.Interface, error) {
			watches++
			return watch.NewEmptyWatch(), nil
		},
	}
	if other := w.listWatch(base, &corev1.Node{}); other != toolscache.ListerWatcher(base) {
		t.Error("a Node's ListerWatcher was replaced")
	}
	lw, ok := w.listWatch(base, &karpv1.NodeClaim{}).(toolscache.ListerWatcherWithContext)
	if !ok || lw == toolscache.ListerWatcherWithContext(base) {
		t.Fatal("the NodeClaim ListerWatcher was kept as it was")
	}
	if _, err := lw.ListWithContext(context.Background(), metav1.ListOptions{}); err != nil || lists != 1 {
		t.Errorf("list: %v, the cache's list called %d times", err, lists)
	}
	wi, err := lw.WatchWithContext(context.Background(), metav1.ListOptions{ResourceVersion: "7"})
	if err != nil {
		t.Fatal(err)
	}
	drain(t, wi)
	if watches != 0 || len(srv.queries) != 1 {
		t.Fatalf("the cache's watch called %d times, this package's %d", watches, len(srv.queries))
	}
	if q := srv.queries[0]; q.Get("allowWatchBookmarks") != "true" || q.Get("resourceVersion") != "7" {
		t.Errorf("query %v: want bookmarks, from resourceVersion 7", q)
	}
}
