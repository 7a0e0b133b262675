package claimwatch

import (
	"context"
	"fmt"
	"net/http"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"sigs.k8s.io/karpenter/pkg/apis"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"
)

// Watcher opens NodeClaim watches with the decoder of this package.
type Watcher struct {
	rc rest.Interface
}

// New builds a Watcher on cfg (its rate limiter, so the watch shares the
// controller's token bucket as client-go's would) and httpClient (the
// manager's, so the watch shares its connections); a nil httpClient makes
// one from cfg.
func New(cfg *rest.Config, httpClient *http.Client) (*Watcher, error) {
	c := rest.CopyConfig(cfg)
	c.GroupVersion = &schema.GroupVersion{Group: apis.Group, Version: "v1"}
	c.APIPath = "/apis"
	// Only a refused request's metav1.Status is decoded by the client: the
	// events are this package's.
	c.NegotiatedSerializer = clientgoscheme.Codecs.WithoutConversion()
	c.ContentType, c.AcceptContentTypes = runtime.ContentTypeJSON, runtime.ContentTypeJSON
	if httpClient == nil {
		var err error
		if httpClient, err = rest.HTTPClientFor(c); err != nil {
			return nil, fmt.Errorf("building the NodeClaim watch's HTTP client: %w", err)
		}
	}
	rc, err := rest.RESTClientForConfigAndClient(c, httpClient)
	if err != nil {
		return nil, fmt.Errorf("building the NodeClaim watch's client: %w", err)
	}
	return &Watcher{rc: rc}, nil
}

// Watch is a cache.ListWatch's watch: the request client-go's would send
// for these options, answered through this package's decoder.
func (w *Watcher) Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	opts.Watch = true
	req := w.rc.Get().Resource("nodeclaims").VersionedParams(&opts, metav1.ParameterCodec)
	body, err := req.Stream(ctx)
	if err != nil {
		return nil, err
	}
	return watch.NewStreamWatcherWithLogger(klog.FromContext(ctx), newDecoder(body),
		// What client-go reports when an event does not decode: an
		// ERROR event carrying this status, which ends the watch.
		apierrors.NewClientErrorReporter(http.StatusInternalServerError, "GET", "ClientWatchDecoding")), nil
}

// NewInformer returns a constructor for the cache's informers
// (cache.Options.NewInformer) that runs NodeClaim informers on w's
// watches, keeping the list (and any selector the cache applies to it)
// as the cache built it; every other kind gets client-go's informer as
// the cache would make it.
//
// The watch sends the options the informer's reflector asks for; it does
// not add the label or field selectors the cache's own watch would, so
// NodeClaims must be cached without one (CacheOptions sets none, and a
// test holds it to that).
func (w *Watcher) NewInformer(lw toolscache.ListerWatcher, obj runtime.Object, resync time.Duration, indexers toolscache.Indexers) toolscache.SharedIndexInformer {
	if _, ok := obj.(*karpv1.NodeClaim); ok {
		if base, ok := lw.(*toolscache.ListWatch); ok {
			lw = &toolscache.ListWatch{ListWithContextFunc: base.ListWithContextFunc, WatchFuncWithContext: w.watchWithBookmarks}
		}
	}
	return toolscache.NewSharedIndexInformer(lw, obj, resync, indexers)
}

// watchWithBookmarks asks for bookmarks, as the cache's own watch does by
// default: a restarted watch then resumes from a recent resourceVersion
// rather than relisting.
func (w *Watcher) watchWithBookmarks(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	opts.AllowWatchBookmarks = true
	return w.Watch(ctx, opts)
}
