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
)

// fakeAPI answers the two reviews as an API server would for one valid
// token, whose user may GET /metrics and nothing else.
type fakeAPI struct {
	token      string
	err        error
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
		out.Status = authnv1.TokenReviewStatus{Authenticated: true, User: authnv1.UserInfo{
			Username: "system:serviceaccount:monitoring:prometheus", UID: "u1", Groups: []string{"system:serviceaccounts", "system:authenticated"},
		}}
	}
	return out, nil
}

func (f *fakeAPI) reviewAccess(_ context.Context, s *authzv1.SubjectAccessReview, _ metav1.CreateOptions) (*authzv1.SubjectAccessReview, error) {
	f.sars = append(f.sars, s.Spec)
	out := s.DeepCopy()
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
		"another verb":      {http.MethodPost, "/metrics", "Bearer good-token", http.StatusForbidden},
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
	c.get(http.MethodPost, "/metrics", "Bearer good-token")
	c.get(http.MethodPost, "/metrics", "Bearer good-token")
	if len(c.api.sars) != 3 {
		t.Errorf("a denied request reviewed %d times in a moment, want once", len(c.api.sars)-2)
	}
	c.clock = c.clock.Add(denyTTL)
	c.get(http.MethodPost, "/metrics", "Bearer good-token")
	if len(c.api.sars) != 4 {
		t.Errorf("a denial was reused past %s", denyTTL)
	}
}

// The API server unreachable: 500, not served, and nothing cached.
func TestMetricsAuthFailsClosed(t *testing.T) {
	c := newAuthCase(t)
	c.api.err = errors.New("connection refused")
	if got := c.get(http.MethodGet, "/metrics", "Bearer good-token"); got != http.StatusInternalServerError || c.served != 0 {
		t.Fatalf("status %d, served %d", got, c.served)
	}
	c.api.err = nil
	if got := c.get(http.MethodGet, "/metrics", "Bearer good-token"); got != http.StatusOK {
		t.Errorf("after the API server came back: status %d", got)
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
}
