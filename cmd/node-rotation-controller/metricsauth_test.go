package main

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/go-logr/logr"
	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
)

// fakeAPI answers the two reviews as an API server would for one valid
// token, whose user may GET /metrics and nothing else.
type fakeAPI struct {
	token      string
	err        error // every TokenReview fails
	sarErr     error // every SubjectAccessReview fails
	tokenError string
	denied     bool // the authorizer also says Denied
	extra      map[string]authnv1.ExtraValue
	tokenCalls int
	sars       []authzv1.SubjectAccessReviewSpec
}

func (f *fakeAPI) tokenReviews() tokenReviews { return tokenFunc(f.reviewToken) }
func (f *fakeAPI) accessReviews() accessReviews {
	return accessFunc(f.reviewAccess)
}

type tokenFunc func(context.Context, *authnv1.TokenReview, metav1.CreateOptions) (*authnv1.TokenReview, error)

func (f tokenFunc) Create(ctx context.Context, t *authnv1.TokenReview, o metav1.CreateOptions) (*authnv1.TokenReview, error) {
	return f(ctx, t, o)
}

type accessFunc func(context.Context, *authzv1.SubjectAccessReview, metav1.CreateOptions) (*authzv1.SubjectAccessReview, error)

func (f accessFunc) Create(ctx context.Context, s *authzv1.SubjectAccessReview, o metav1.CreateOptions) (*authzv1.SubjectAccessReview, error) {
	return f(ctx, s, o)
}

func (f *fakeAPI) reviewToken(_ context.Context, t *authnv1.TokenReview, _ metav1.CreateOptions) (*authnv1.TokenReview, error) {
	f.tokenCalls++
	if f.err != nil {
		return nil, f.err
	}
	out := t.DeepCopy()
	if t.Spec.Token == f.token {
		out.Status = authnv1.TokenReviewStatus{Authenticated: true, Error: f.tokenError, User: authnv1.UserInfo{
			Username: "system:serviceaccount:monitoring:prometheus", UID: "u1", Groups: []string{"system:serviceaccounts", "system:authenticated"},
			Extra: f.extra,
		}}
	}
	return out, nil
}

func (f *fakeAPI) reviewAccess(_ context.Context, s *authzv1.SubjectAccessReview, _ metav1.CreateOptions) (*authzv1.SubjectAccessReview, error) {
	f.sars = append(f.sars, s.Spec)
	if f.sarErr != nil {
		return nil, f.sarErr
	}
	out := s.DeepCopy()
	out.Status.Denied = f.denied
	a := s.Spec.NonResourceAttributes
	out.Status.Allowed = s.Spec.User == "system:serviceaccount:monitoring:prometheus" && a != nil && a.Path == "/metrics" && a.Verb == "get"
	return out, nil
}

type authCase struct {
	t       *testing.T
	api     *fakeAPI
	clock   time.Time
	handler http.Handler
	served  int
}

func newAuthCase(t *testing.T) *authCase {
	c := &authCase{t: t, api: &fakeAPI{token: "good-token"}, clock: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)}
	r := newReviewer(c.api.tokenReviews(), c.api.accessReviews(), func() time.Time { return c.clock })
	h, err := r.filter(logr.Discard(), http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		c.served++
		_, _ = w.Write([]byte("metrics"))
	}))
	if err != nil {
		t.Fatal(err)
	}
	c.handler = h
	return c
}

func (c *authCase) get(method, path, authorization string) int {
	req := httptest.NewRequest(method, path, nil)
	if authorization != "" {
		req.Header.Set("Authorization", authorization)
	}
	rec := httptest.NewRecorder()
	c.handler.ServeHTTP(rec, req)
	return rec.Code
}

// Without a token, with a token the API server does not authenticate, or
// with a user not granted GET on the path, /metrics is refused and the
// handler never runs; a granted user's GET is served.
func TestMetricsAuthAnswers(t *testing.T) {
	for name, tc := range map[string]struct {
		method, path, auth string
		want               int
	}{
		"no token":          {http.MethodGet, "/metrics", "", http.StatusUnauthorized},
		"not bearer":        {http.MethodGet, "/metrics", "Basic Zm9vOmJhcg==", http.StatusUnauthorized},
		"empty bearer":      {http.MethodGet, "/metrics", "Bearer ", http.StatusUnauthorized},
		"unknown token":     {http.MethodGet, "/metrics", "Bearer stolen", http.StatusUnauthorized},
		"granted":           {http.MethodGet, "/metrics", "Bearer good-token", http.StatusOK},
		"lower-case scheme": {http.MethodGet, "/metrics", "bearer good-token", http.StatusOK},
		"another verb":      {http.MethodPost, "/metrics", "Bearer good-token", http.StatusMethodNotAllowed},
		"another path":      {http.MethodGet, "/debug", "Bearer good-token", http.StatusForbidden},
	} {
		t.Run(name, func(t *testing.T) {
			c := newAuthCase(t)
			if got := c.get(tc.method, tc.path, tc.auth); got != tc.want {
				t.Fatalf("status %d, want %d", got, tc.want)
			}
			if served := c.served == 1; served != (tc.want == http.StatusOK) {
				t.Errorf("handler ran %d times for status %d", c.served, tc.want)
			}
		})
	}
}

// The SubjectAccessReview asks about the caller's user, UID and groups for
// the request's lower-cased verb on its path, as a non-resource request.
func TestMetricsAuthAsksForTheUsersAccessToThePath(t *testing.T) {
	c := newAuthCase(t)
	c.get(http.MethodGet, "/metrics", "Bearer good-token")
	if len(c.api.sars) != 1 {
		t.Fatalf("%d SubjectAccessReviews, want 1", len(c.api.sars))
	}
	s := c.api.sars[0]
	if s.User != "system:serviceaccount:monitoring:prometheus" || s.UID != "u1" || len(s.Groups) != 2 || s.ResourceAttributes != nil ||
		s.NonResourceAttributes == nil || *s.NonResourceAttributes != (authzv1.NonResourceAttributes{Path: "/metrics", Verb: "get"}) {
		t.Errorf("review %+v", s)
	}
}

// Answers are reused for their TTL and asked again after it: one
// TokenReview a minute per token, one SubjectAccessReview per five minutes
// for an allowed user (30 s for a denied one).
func TestMetricsAuthReusesAnswersForTheirTTL(t *testing.T) {
	c := newAuthCase(t)
	for range 3 {
		if got := c.get(http.MethodGet, "/metrics", "Bearer good-token"); got != http.StatusOK {
			t.Fatalf("status %d", got)
		}
	}
	if c.api.tokenCalls != 1 || len(c.api.sars) != 1 {
		t.Fatalf("%d TokenReviews and %d SubjectAccessReviews for three scrapes in a second, want 1 and 1", c.api.tokenCalls, len(c.api.sars))
	}
	c.clock = c.clock.Add(tokenTTL)
	c.get(http.MethodGet, "/metrics", "Bearer good-token")
	if c.api.tokenCalls != 2 || len(c.api.sars) != 1 {
		t.Errorf("after a minute: %d TokenReviews, %d SubjectAccessReviews, want 2 and 1", c.api.tokenCalls, len(c.api.sars))
	}
	c.clock = c.clock.Add(allowTTL)
	c.get(http.MethodGet, "/metrics", "Bearer good-token")
	if len(c.api.sars) != 2 {
		t.Errorf("after five minutes: %d SubjectAccessReviews, want 2", len(c.api.sars))
	}
	c.get(http.MethodGet, "/debug", "Bearer good-token")
	c.get(http.MethodGet, "/debug", "Bearer good-token")
	if len(c.api.sars) != 3 {
		t.Errorf("a denied request reviewed %d times in a moment, want once", len(c.api.sars)-2)
	}
	c.clock = c.clock.Add(denyTTL)
	c.get(http.MethodGet, "/debug", "Bearer good-token")
	if len(c.api.sars) != 4 {
		t.Errorf("a denial was reused past %s", denyTTL)
	}
}

// The API server unreachable for either review: 500, not served, and
// nothing cached.
func TestMetricsAuthFailsClosed(t *testing.T) {
	c := newAuthCase(t)
	c.api.err = errors.New("connection refused")
	if got := c.get(http.MethodGet, "/metrics", "Bearer good-token"); got != http.StatusInternalServerError || c.served != 0 {
		t.Fatalf("TokenReview failing: status %d, served %d", got, c.served)
	}
	c.api.err = nil
	c.api.sarErr = errors.New("connection refused")
	if got := c.get(http.MethodGet, "/metrics", "Bearer good-token"); got != http.StatusInternalServerError || c.served != 0 {
		t.Fatalf("SubjectAccessReview failing: status %d, served %d", got, c.served)
	}
	c.api.sarErr = nil
	if got := c.get(http.MethodGet, "/metrics", "Bearer good-token"); got != http.StatusOK {
		t.Errorf("after the API server came back: status %d", got)
	}
}

// What one caller's answer allows is never reused for another question:
// another token is reviewed (and refused), another path is reviewed (and
// refused), a user with other extra is reviewed again.
func TestMetricsAuthAnswersAreNotSharedAcrossQuestions(t *testing.T) {
	c := newAuthCase(t)
	if got := c.get(http.MethodGet, "/metrics", "Bearer good-token"); got != http.StatusOK {
		t.Fatalf("status %d", got)
	}
	if got := c.get(http.MethodGet, "/metrics", "Bearer stolen"); got != http.StatusUnauthorized {
		t.Errorf("another token after a good one: status %d, want 401", got)
	}
	if got := c.get(http.MethodGet, "/debug", "Bearer good-token"); got != http.StatusForbidden {
		t.Errorf("another path after an allowed one: status %d, want 403", got)
	}
	before := len(c.api.sars)
	c.api.extra = map[string]authnv1.ExtraValue{"authentication.kubernetes.io/pod-name": {"prometheus-0"}}
	c.clock = c.clock.Add(tokenTTL) // the token's user is looked up again, now with extra
	c.get(http.MethodGet, "/metrics", "Bearer good-token")
	if len(c.api.sars) != before+1 {
		t.Fatalf("a user with other extra reused another's answer")
	}
	if got := c.api.sars[len(c.api.sars)-1].Extra["authentication.kubernetes.io/pod-name"]; len(got) != 1 || got[0] != "prometheus-0" {
		t.Errorf("extra not forwarded to the SubjectAccessReview: %v", c.api.sars[len(c.api.sars)-1].Extra)
	}
}

// A token the TokenReview authenticates but reports an error for, and an
// access both allowed and denied, are refused; an Authorization header
// that is not a bearer token costs no review.
func TestMetricsAuthRefusesDoubtfulAnswers(t *testing.T) {
	c := newAuthCase(t)
	if got := c.get(http.MethodGet, "/metrics", "Basic good-token"); got != http.StatusUnauthorized || c.api.tokenCalls != 0 {
		t.Errorf("Basic credentials: status %d after %d TokenReviews, want 401 after none", got, c.api.tokenCalls)
	}
	if got := c.get(http.MethodGet, "/metrics", "Bearer "); got != http.StatusUnauthorized || c.api.tokenCalls != 0 {
		t.Errorf("an empty token: status %d after %d TokenReviews, want 401 after none", got, c.api.tokenCalls)
	}
	c.api.tokenError = "token expired"
	if got := c.get(http.MethodGet, "/metrics", "Bearer good-token"); got != http.StatusUnauthorized {
		t.Errorf("authenticated with an error: status %d, want 401", got)
	}
	c = newAuthCase(t)
	c.api.denied = true
	if got := c.get(http.MethodGet, "/metrics", "Bearer good-token"); got != http.StatusForbidden || c.served != 0 {
		t.Errorf("allowed and denied: status %d, served %d, want 403", got, c.served)
	}
}

// The reviews spend their own request budget, not the reconciler's.
func TestMetricsAuthHasItsOwnRateLimiter(t *testing.T) {
	shared := &rest.Config{Host: "https://127.0.0.1:6443", RateLimiter: flowcontrol.NewTokenBucketRateLimiter(50, 100)}
	c := reviewConfig(shared)
	if c.RateLimiter == nil || c.RateLimiter == shared.RateLimiter {
		t.Error("the reviews share the manager's rate limiter")
	}
	if c.RateLimiter.QPS() != reviewQPS || shared.RateLimiter.QPS() != 50 {
		t.Errorf("review QPS %v, manager QPS %v", c.RateLimiter.QPS(), shared.RateLimiter.QPS())
	}
}

// The caches stay bounded: past the bound, expired answers go first.
func TestMetricsAuthCacheIsBounded(t *testing.T) {
	c := newAuthCase(t)
	r := newReviewer(c.api.tokenReviews(), c.api.accessReviews(), func() time.Time { return c.clock })
	for i := range reviewCacheMax + 10 {
		cachePut(r, r.rules, string(rune(i)), true, time.Second)
		if i == reviewCacheMax/2 {
			c.clock = c.clock.Add(2 * time.Second)
		}
	}
	if n := len(r.rules); n > reviewCacheMax {
		t.Errorf("%d entries, bound %d", n, reviewCacheMax)
	}
	if _, ok := cacheGet(r, r.rules, string(rune(reviewCacheMax+9))); !ok {
		t.Error("the newest answer was dropped")
	}
	// The bound was reached with half the entries expired: only those went.
	if _, ok := cacheGet(r, r.rules, string(rune(reviewCacheMax/2+1))); !ok {
		t.Error("an unexpired answer was dropped while expired ones could go")
	}
}
