package main

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	authnclient "k8s.io/client-go/kubernetes/typed/authentication/v1"
	authzclient "k8s.io/client-go/kubernetes/typed/authorization/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// How long a review's answer is reused, as controller-runtime's
// filters.WithAuthenticationAndAuthorization does: a revoked token or a
// removed grant stops working within these.
const (
	tokenTTL      = time.Minute
	allowTTL      = 5 * time.Minute
	denyTTL       = 30 * time.Second
	reviewTimeout = 10 * time.Second
	// The reviews have their own request budget: a caller sending made-up
	// tokens to the metrics port spends it, not the reconciler's.
	reviewQPS, reviewBurst = 5, 10
	// reviewCacheMax bounds each cache: past it, expired answers are
	// dropped, and if none has expired the cache starts over.
	reviewCacheMax = 4096
)

// metricsAuth is the -metrics-auth filter in front of /metrics: the
// caller's bearer token is checked with a TokenReview (401 unless
// authenticated) and its user's right to the request's verb on the path
// with a SubjectAccessReview (403 unless allowed) — the checks
// controller-runtime's filters.WithAuthenticationAndAuthorization makes.
// That package links k8s.io/apiserver's whole authentication stack (gRPC,
// OpenTelemetry, the webhook client): 6.2 MB of binary and about 4.5 MiB
// of resident memory for its package initialisers alone, in every
// install, most of which never turn auth on (docs/performance.md#startup).
// These two reviews are all it needs.
func metricsAuth(shared *rest.Config, hc *http.Client) (metricsserver.Filter, error) {
	c := reviewConfig(shared)
	authn, err := authnclient.NewForConfigAndClient(c, hc)
	if err != nil {
		return nil, fmt.Errorf("metrics auth: TokenReview client: %w", err)
	}
	authz, err := authzclient.NewForConfigAndClient(c, hc)
	if err != nil {
		return nil, fmt.Errorf("metrics auth: SubjectAccessReview client: %w", err)
	}
	r := newReviewer(authn.TokenReviews(), authz.SubjectAccessReviews(), time.Now)
	return r.filter, nil
}

// reviewConfig is the manager's config with the reviews' own rate limiter.
func reviewConfig(shared *rest.Config) *rest.Config {
	c := rest.CopyConfig(shared)
	c.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(reviewQPS, reviewBurst)
	return c
}

type tokenReviews interface {
	Create(context.Context, *authnv1.TokenReview, metav1.CreateOptions) (*authnv1.TokenReview, error)
}

type accessReviews interface {
	Create(context.Context, *authzv1.SubjectAccessReview, metav1.CreateOptions) (*authzv1.SubjectAccessReview, error)
}

// reviewer answers "may this request read the metrics?" with the API
// server's reviews, reusing each answer for its TTL.
type reviewer struct {
	tokens tokenReviews
	access accessReviews
	now    func() time.Time

	mu    sync.Mutex
	users map[[sha256.Size]byte]cached[*authnv1.UserInfo] // by the token's hash: the token itself is never kept
	rules map[string]cached[bool]                         // by the whole review asked
}

type cached[T any] struct {
	value   T
	expires time.Time
}

func newReviewer(t tokenReviews, a accessReviews, now func() time.Time) *reviewer {
	return &reviewer{tokens: t, access: a, now: now,
		users: map[[sha256.Size]byte]cached[*authnv1.UserInfo]{}, rules: map[string]cached[bool]{}}
}

func (r *reviewer) filter(log logr.Logger, next http.Handler) (http.Handler, error) {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		// Metrics are read, never written: any other method is refused
		// before it costs a review (and before its name becomes a key).
		if req.Method != http.MethodGet && req.Method != http.MethodHead {
			http.Error(w, "Method Not Allowed", http.StatusMethodNotAllowed)
			return
		}
		ctx, cancel := context.WithTimeout(req.Context(), reviewTimeout)
		defer cancel()
		user, err := r.authenticate(ctx, req)
		if err != nil {
			log.Error(err, "metrics request: TokenReview failed")
			http.Error(w, "Authentication failed", http.StatusInternalServerError)
			return
		}
		if user == nil {
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
			return
		}
		allowed, err := r.authorize(ctx, user, strings.ToLower(req.Method), req.URL.Path)
		if err != nil {
			log.Error(err, "metrics request: SubjectAccessReview failed", "user", user.Username)
			http.Error(w, "Authorization for user "+user.Username+" failed", http.StatusInternalServerError)
			return
		}
		if !allowed {
			http.Error(w, "Authorization denied for user "+user.Username, http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, req)
	}), nil
}

// authenticate returns the bearer token's user, or nil when the request
// carries none or the API server does not authenticate it.
func (r *reviewer) authenticate(ctx context.Context, req *http.Request) (*authnv1.UserInfo, error) {
	scheme, token, ok := strings.Cut(req.Header.Get("Authorization"), " ")
	token = strings.TrimSpace(token)
	if !ok || !strings.EqualFold(scheme, "bearer") || token == "" {
		return nil, nil
	}
	key := sha256.Sum256([]byte(token))
	if u, ok := cacheGet(r, r.users, key); ok {
		return u, nil
	}
	tr, err := r.tokens.Create(ctx, &authnv1.TokenReview{Spec: authnv1.TokenReviewSpec{Token: token}}, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("creating a TokenReview: %w", err)
	}
	var user *authnv1.UserInfo
	if tr.Status.Authenticated && tr.Status.Error == "" {
		user = tr.Status.User.DeepCopy()
	}
	cachePut(r, r.users, key, user, tokenTTL)
	return user, nil
}

// authorize asks whether user may use verb on the non-resource path. The
// answer is reused for the same question: the same user, UID, groups and
// extra (which a webhook authorizer may read), verb and path.
func (r *reviewer) authorize(ctx context.Context, user *authnv1.UserInfo, verb, path string) (bool, error) {
	extra := map[string]authzv1.ExtraValue{}
	for k, v := range user.Extra {
		extra[k] = authzv1.ExtraValue(v)
	}
	spec := authzv1.SubjectAccessReviewSpec{
		User: user.Username, UID: user.UID, Groups: user.Groups, Extra: extra,
		NonResourceAttributes: &authzv1.NonResourceAttributes{Path: path, Verb: verb},
	}
	asked, err := json.Marshal(spec)
	if err != nil {
		return false, fmt.Errorf("encoding a SubjectAccessReview: %w", err)
	}
	key := string(asked)
	if allowed, ok := cacheGet(r, r.rules, key); ok {
		return allowed, nil
	}
	sar, err := r.access.Create(ctx, &authzv1.SubjectAccessReview{Spec: spec}, metav1.CreateOptions{})
	if err != nil {
		return false, fmt.Errorf("creating a SubjectAccessReview: %w", err)
	}
	allowed := sar.Status.Allowed && !sar.Status.Denied
	ttl := denyTTL
	if allowed {
		ttl = allowTTL
	}
	cachePut(r, r.rules, key, allowed, ttl)
	return allowed, nil
}

func cacheGet[K comparable, V any](r *reviewer, m map[K]cached[V], key K) (V, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, ok := m[key]
	if !ok || !r.now().Before(c.expires) {
		var zero V
		return zero, false
	}
	return c.value, true
}

func cachePut[K comparable, V any](r *reviewer, m map[K]cached[V], key K, value V, ttl time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.now()
	if len(m) >= reviewCacheMax {
		for k, c := range m {
			if !now.Before(c.expires) {
				delete(m, k)
			}
		}
		if len(m) >= reviewCacheMax {
			clear(m)
		}
	}
	m[key] = cached[V]{value: value, expires: now.Add(ttl)}
}
