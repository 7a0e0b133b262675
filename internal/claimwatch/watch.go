package claimwatch

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/watch"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/klog/v2"
	"sigs.k8s.io/karpenter/pkg/apis"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"
)

// Watcher opens NodeClaim watches with the decoder of this package.
type Watcher struct {
	rc rest.Interface
	// openRetries and openRetryWait: how often and how far apart a watch
	// whose connection ends or times out at open is tried again — client-go's
	// defaults for a watch (10 retries, 1 s apart).
	openRetries   int
	openRetryWait time.Duration
}

// New builds a Watcher on cfg. Its requests skip cfg's rate limiter, as
// client-go's watches do: a watch is one long request, and opening one
// again (every few minutes, at the server's timeout) must not wait behind
// the workers' writes nor spend their tokens. Its HTTP client shares the
// transport of every other client made from an equal configuration
// (client-go caches transports by TLS configuration).
func New(cfg *rest.Config) (*Watcher, error) {
	c := rest.CopyConfig(cfg)
	c.GroupVersion = &schema.GroupVersion{Group: apis.Group, Version: "v1"}
	c.APIPath = "/apis"
	// Only a refused request's metav1.Status is decoded by the client: the
	// events are this package's.
	c.NegotiatedSerializer = clientgoscheme.Codecs.WithoutConversion()
	// JSON, the only encoding a custom resource has, with client-go's
	// default Accept header, whatever cfg asks of other clients.
	c.ContentType, c.AcceptContentTypes = "", ""
	c.RateLimiter = flowcontrol.NewFakeAlwaysRateLimiter()
	rc, err := rest.RESTClientFor(c)
	if err != nil {
		return nil, fmt.Errorf("building the NodeClaim watch's client: %w", err)
	}
	return &Watcher{rc: rc, openRetries: 10, openRetryWait: time.Second}, nil
}

// Watch is a cache.ListWatch's watch: the request client-go's would send
// for these options, answered through this package's decoder. As
// client-go's watch does, a connection that ends or times out before the
// server answers is tried again (open), and after the last try gives an
// empty watch rather than an error; the reflector ends such a very short
// watch and starts over, listing (or streaming) every NodeClaim anew.
func (w *Watcher) Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	opts.Watch = true
	body, err := w.open(ctx, opts)
	if err != nil {
		if utilnet.IsProbableEOF(err) || utilnet.IsTimeout(err) {
			return watch.NewEmptyWatch(), nil
		}
		return nil, err
	}
	return watch.NewStreamWatcherWithLogger(klog.FromContext(ctx), newDecoder(body),
		// What client-go reports when an event does not decode: an
		// ERROR event carrying this status, which ends the watch.
		apierrors.NewClientErrorReporter(http.StatusInternalServerError, "GET", "ClientWatchDecoding")), nil
}

// open sends the watch request, again after openRetryWait while the
// connection ends or times out at open, at most openRetries more times.
func (w *Watcher) open(ctx context.Context, opts metav1.ListOptions) (io.ReadCloser, error) {
	for try := 0; ; try++ {
		body, err := w.rc.Get().Resource("nodeclaims").VersionedParams(&opts, metav1.ParameterCodec).Stream(ctx)
		if err == nil || try == w.openRetries || !utilnet.IsProbableEOF(err) && !utilnet.IsTimeout(err) {
			return body, err
		}
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(w.openRetryWait):
		}
	}
}

// NewInformer returns a constructor for the cache's informers
// (cache.Options.NewInformer): NodeClaim informers run on w's watches
// (listWatch), every other kind gets client-go's informer as the cache
// would make it.
func (w *Watcher) NewInformer(lw toolscache.ListerWatcher, obj runtime.Object, resync time.Duration, indexers toolscache.Indexers) toolscache.SharedIndexInformer {
	return toolscache.NewSharedIndexInformer(w.listWatch(lw, obj), obj, resync, indexers)
}

// listWatch keeps the cache's list for NodeClaims and replaces its watch
// with w's. The informer's reflector fills the cache from a watch (client-go's
// WatchList: the initial events stream, then a bookmark), and lists only
// where the server cannot, so every NodeClaim the cache holds, not only
// the updates, comes through this package's decoder.
//
// The watch asks for bookmarks, as the cache's own does by default, so a
// restarted watch resumes from a recent resourceVersion; it does not add
// the label or field selectors the cache's own watch would, so NodeClaims
// must be cached without one (CacheOptions sets none, and a test holds it
// to that).
func (w *Watcher) listWatch(lw toolscache.ListerWatcher, obj runtime.Object) toolscache.ListerWatcher {
	if _, ok := obj.(*karpv1.NodeClaim); !ok {
		return lw
	}
	base, ok := lw.(*toolscache.ListWatch)
	if !ok {
		return lw
	}
	return &toolscache.ListWatch{ListWithContextFunc: base.ListWithContextFunc, WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
		opts.AllowWatchBookmarks = true
		return w.Watch(ctx, opts)
	}}
}
