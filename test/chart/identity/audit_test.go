//go:build e2e

package identity_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// expectNoForbidden reads the API server's audit log (cluster.sh records
// every ServiceAccount request once answered) for the requests of
// system:serviceaccount:nrc-identity:<sa> since the test began: there must
// be some, they must include the rotation's writes, and none may have been
// denied by the authorizer. A 403 from admission (the preflight's dry-run
// Pod before the new namespace's default ServiceAccount exists) says nothing
// of the chart's RBAC; it is logged, not failed.
func (w *world) expectNoForbidden(t *testing.T, sa string, since time.Time) {
	t.Helper()
	user := fmt.Sprintf("system:serviceaccount:%s:%s", namespace, sa)
	events := readAudit(t, w.auditLog, user, since)
	used := map[string]int{}
	var forbidden, admission []string
	for _, e := range events {
		key := verbResource(e)
		used[key]++
		switch {
		case deniedByRBAC(e):
			forbidden = append(forbidden, fmt.Sprintf("%s %s", key, e.RequestURI))
		case answered403(e):
			admission = append(admission, fmt.Sprintf("%s %s: %s", key, e.RequestURI, e.ResponseStatus.Message))
		}
	}
	keys := slices.Sorted(func(yield func(string) bool) {
		for k := range used {
			if !yield(k) {
				return
			}
		}
	})
	t.Logf("audit: %d requests of %s, %d denied by RBAC; verbs used: %s", len(events), user, len(forbidden), strings.Join(keys, ", "))
	for _, a := range admission {
		t.Logf("403 from admission, RBAC allowed it: %s", a)
	}
	if len(forbidden) > 0 {
		t.Errorf("requests of %s denied by RBAC (the chart's RBAC is missing a grant):\n  %s", user, strings.Join(forbidden, "\n  "))
	}
	w.expectEveryGrantUsed(t, used)
	// The rotation's own writes, so a run that never acted as the
	// ServiceAccount (a wrong kubeconfig, an idle controller) cannot pass.
	for _, want := range []string{
		"patch karpenter.sh/nodepools", "patch karpenter.sh/nodeclaims", "delete karpenter.sh/nodeclaims",
		"patch nodes", "create pods", "delete pods", "update coordination.k8s.io/leases",
	} {
		if used[want] == 0 {
			t.Errorf("the audit log shows no %q by %s: the controller did not act under the chart's identity", want, user)
		}
	}
}

// notExercised are the chart's grants a rollback-and-rotation run may not
// use, each with the reason it is granted all the same.
var notExercised = map[string]string{
	"get noderotation.io/rotationpolicies": "the cache serves every read of a policy; granted with list and watch, as the cache's informer may be asked for one",
	"patch events":                         "the Event recorder patches an Event only when the same Event repeats within its aggregation window",
	"list events":                          "read only for a placeholder Karpenter has not served for a minute (docs/design.md#fail-fast); this run's rollback is a 4 s readyTimeout",
	// A pass decides on its cached copies (docs/design.md#cache-based-writes);
	// only the recovery paths read these fresh.
	"get nodes":                   recoveryRead,
	"get karpenter.sh/nodeclaims": recoveryRead,
	"get karpenter.sh/nodepools":  recoveryRead,
}

const recoveryRead = "read fresh only by the startup sweep, the re-adoption and repair of stranded rotations, and a write to an object the pass never observed; a clean rollback and rotation read the cache"

// expectEveryGrantUsed: each verb the chart's ClusterRole and Role grant
// was used by the run (as verb group/resource in the audit log), or is one
// the run cannot exercise (notExercised). A list is also served by a
// watch: client-go's informers make their initial list as a streaming
// watch request (WatchListClient).
func (w *world) expectEveryGrantUsed(t *testing.T, used map[string]int) {
	t.Helper()
	cr := &rbacv1.ClusterRole{}
	must(t, w.admin.Get(w.ctx, client.ObjectKey{Name: release}, cr), "reading the chart's ClusterRole")
	role := &rbacv1.Role{}
	must(t, w.admin.Get(w.ctx, client.ObjectKey{Namespace: namespace, Name: release}, role), "reading the chart's Role")
	for _, rule := range append(cr.Rules, role.Rules...) {
		for _, g := range rule.APIGroups {
			for _, res := range rule.Resources {
				r := res
				if g != "" {
					r = g + "/" + res
				}
				for _, verb := range rule.Verbs {
					key := verb + " " + r
					switch {
					case used[key] > 0, verb == "list" && used["watch "+r] > 0:
					case notExercised[key] != "":
						t.Logf("granted, not exercised by this run: %s (%s)", key, notExercised[key])
					default:
						t.Errorf("the chart grants %q and the controller never used it in a rollback and a rotation: drop it, or name why in notExercised", key)
					}
				}
			}
		}
	}
}

// printForbidden prints the ServiceAccount's requests answered 403, the
// usual cause of a rotation that never completes under the chart's RBAC.
func (w *world) printForbidden(t *testing.T, sa string, since time.Time) {
	user := fmt.Sprintf("system:serviceaccount:%s:%s", namespace, sa)
	for _, e := range readAudit(t, w.auditLog, user, since) {
		if answered403(e) {
			t.Logf("403 (authorizer: %s): %s %s", e.Annotations[decisionAnnotation], verbResource(e), e.RequestURI)
		}
	}
}

// verbResource names a request as RBAC does: verb, API group/resource and
// subresource.
func verbResource(e auditv1.Event) string {
	if e.ObjectRef == nil {
		return e.Verb + " " + e.RequestURI
	}
	r := e.ObjectRef.Resource
	if e.ObjectRef.Subresource != "" {
		r += "/" + e.ObjectRef.Subresource
	}
	if e.ObjectRef.APIGroup != "" {
		r = e.ObjectRef.APIGroup + "/" + r
	}
	return e.Verb + " " + r
}

func readAudit(t *testing.T, path, user string, since time.Time) []auditv1.Event {
	t.Helper()
	f, err := os.Open(path)
	must(t, err, "opening the audit log")
	defer f.Close()
	var out []auditv1.Event
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var e auditv1.Event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("audit log %s: a line that is no audit event: %v", path, err)
		}
		if e.User.Username == user && !e.RequestReceivedTimestamp.Time.Before(since) {
			out = append(out, e)
		}
	}
	must(t, sc.Err(), "reading the audit log")
	return out
}
