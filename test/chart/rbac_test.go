package chart

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
)

// The exact RBAC: one line per (API group, resource) with its verbs, in the
// order the code needs them. The evidence for each verb — the call that
// needs it — is in charts/node-rotation-controller/README.md (RBAC). Any
// widening (a verb, a resource, a wildcard, a rule for another namespace)
// fails here and must be justified there first.
var (
	wantClusterRole = []string{
		"karpenter.sh/nodeclaims: get list watch patch delete",
		"karpenter.sh/nodepools: get list watch patch",
		"core/nodes: get list watch patch",
		"core/pods: list",
		"policy/poddisruptionbudgets: list watch",
		"core/events: create patch",
		"noderotation.io/rotationpolicies: get list watch",
		"noderotation.io/rotationpolicies/status: update",
	}
	// metrics.auth adds the delegated authentication and authorization of
	// /metrics (controller-runtime's filters.WithAuthenticationAndAuthorization).
	wantMetricsAuth = []string{
		"authentication.k8s.io/tokenreviews: create",
		"authorization.k8s.io/subjectaccessreviews: create",
	}
	// prePull.usePullSecrets: the pre-pull Pods in the moving Pods'
	// namespaces, cached by label (list, watch), created and deleted there.
	wantPullSecretsPods = "core/pods: list watch create delete"
	wantRole            = []string{
		"core/pods: list watch create delete",
		"core/events: list",
		"coordination.k8s.io/leases: get create update",
	}
)

// ruleLines flattens rules to "group/resource: verbs", refusing what the
// chart never grants: wildcards, resourceNames, nonResourceURLs.
func ruleLines(t *testing.T, what string, rules []rbacv1.PolicyRule) []string {
	t.Helper()
	var out []string
	for _, r := range rules {
		if len(r.ResourceNames) > 0 || len(r.NonResourceURLs) > 0 {
			t.Errorf("%s: a rule with resourceNames or nonResourceURLs: %+v", what, r)
		}
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				if g == "*" || res == "*" || slices.Contains(r.Verbs, "*") {
					t.Errorf("%s: a wildcard: %+v", what, r)
				}
				if g == "" {
					g = "core"
				}
				out = append(out, fmt.Sprintf("%s/%s: %s", g, res, strings.Join(r.Verbs, " ")))
			}
		}
	}
	return out
}

// withPods is the ClusterRole with its Pods rule's verbs as line says.
func withPods(line string) []string {
	out := slices.Clone(wantClusterRole)
	out[slices.Index(out, "core/pods: list")] = line
	return out
}

func TestRBACIsExactlyWhatTheCodeUses(t *testing.T) {
	c := loadChart(t)
	for _, tc := range []struct {
		sets        []string
		clusterRole []string
	}{
		{nil, append(slices.Clone(wantClusterRole), wantMetricsAuth...)},
		{[]string{"metrics.auth=false", "serviceMonitor.enabled=true"}, wantClusterRole},
		{[]string{"metrics.auth=true"}, append(slices.Clone(wantClusterRole), wantMetricsAuth...)},
		// No endpoint, nothing to authenticate for.
		{[]string{"metrics.auth=true", "metrics.port=0"}, wantClusterRole},
		{[]string{"serviceAccount.create=false", "serviceAccount.name=existing"}, append(slices.Clone(wantClusterRole), wantMetricsAuth...)},
		{[]string{"metrics.auth=false", "prePull.usePullSecrets=true"}, withPods(wantPullSecretsPods)},
	} {
		r := mustRender(t, c, withMonitoring, tc.sets...)
		cr := find[*rbacv1.ClusterRole](t, r)
		if cr == nil || cr.AggregationRule != nil {
			t.Fatalf("--set %v: ClusterRole %+v", tc.sets, cr)
		}
		if got := ruleLines(t, "ClusterRole", cr.Rules); !slices.Equal(got, tc.clusterRole) {
			t.Errorf("--set %v: ClusterRole rules\n got %q\nwant %q", tc.sets, got, tc.clusterRole)
		}
		role := find[*rbacv1.Role](t, r)
		if role == nil || role.Namespace != namespace {
			t.Fatalf("--set %v: Role %+v, want one in the release namespace", tc.sets, role)
		}
		if got := ruleLines(t, "Role", role.Rules); !slices.Equal(got, wantRole) {
			t.Errorf("--set %v: Role rules\n got %q\nwant %q", tc.sets, got, wantRole)
		}
		// No other RBAC object: nothing else grants the ServiceAccount anything.
		for _, k := range r.kinds() {
			switch strings.SplitN(k, "/", 2)[0] {
			case "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding":
			default:
				continue
			}
			if strings.SplitN(k, "/", 2)[1] != releaseName {
				t.Errorf("--set %v: an extra RBAC object %s", tc.sets, k)
			}
		}
	}
}
