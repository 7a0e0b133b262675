package identity_test

import (
	"encoding/json"
	"testing"

	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
)

// decisionAnnotation is the audit annotation in which the API server records
// the authorizer's answer to a request, "allow" or "forbid".
const decisionAnnotation = "authorization.k8s.io/decision"

func answered403(e auditv1.Event) bool {
	return e.ResponseStatus != nil && e.ResponseStatus.Code == 403
}

// deniedByRBAC: answered 403 and the authorizer did not allow it. Admission
// answers 403 too (a missing ServiceAccount, a terminating namespace) after
// the authorizer said "allow"; an event without the annotation counts as a
// denial, so a log that lost it fails rather than passes.
func deniedByRBAC(e auditv1.Event) bool {
	return answered403(e) && e.Annotations[decisionAnnotation] != "allow"
}

// The two 403s of a real run (kube-apiserver v1.37.2's audit log, trimmed):
// the preflight's dry-run Pod refused by the ServiceAccount admission plugin
// after RBAC allowed it, and a request RBAC denied.
const (
	admission403 = `{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","verb":"create","requestURI":"/api/v1/namespaces/nrc-identity/pods?dryRun=All","objectRef":{"resource":"pods","namespace":"nrc-identity","apiVersion":"v1"},"responseStatus":{"metadata":{},"status":"Failure","message":"pods \"nrc-preflight-\" is forbidden: error looking up service account nrc-identity/default: serviceaccount \"default\" not found","reason":"Forbidden","code":403},"annotations":{"authorization.k8s.io/decision":"allow","authorization.k8s.io/reason":"RBAC: allowed by RoleBinding \"nrc-identity/nrc-identity\" of Role \"nrc-identity\" to ServiceAccount \"nrc-identity/nrc-identity\""}}`
	rbac403      = `{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","verb":"list","requestURI":"/api/v1/secrets","objectRef":{"resource":"secrets","apiVersion":"v1"},"responseStatus":{"metadata":{},"status":"Failure","message":"secrets is forbidden: User \"system:serviceaccount:nrc-identity:nrc-identity\" cannot list resource \"secrets\" in API group \"\" at the cluster scope","reason":"Forbidden","code":403},"annotations":{"authorization.k8s.io/decision":"forbid","authorization.k8s.io/reason":""}}`
	allowed200   = `{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","verb":"patch","objectRef":{"resource":"nodes","apiVersion":"v1"},"responseStatus":{"metadata":{},"code":200},"annotations":{"authorization.k8s.io/decision":"allow"}}`
	unannotated  = `{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","verb":"get","objectRef":{"resource":"nodes","apiVersion":"v1"},"responseStatus":{"metadata":{},"code":403}}`
)

func TestOnlyTheAuthorizersDenialCountsAgainstTheChart(t *testing.T) {
	for _, c := range []struct {
		name, line    string
		is403, denied bool
	}{
		{"admission refused what RBAC allowed", admission403, true, false},
		{"RBAC denied", rbac403, true, true},
		{"allowed and served", allowed200, false, false},
		{"403 without the authorizer's annotation", unannotated, true, true},
	} {
		var e auditv1.Event
		if err := json.Unmarshal([]byte(c.line), &e); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got := answered403(e); got != c.is403 {
			t.Errorf("%s: answered403 = %v, want %v", c.name, got, c.is403)
		}
		if got := deniedByRBAC(e); got != c.denied {
			t.Errorf("%s: deniedByRBAC = %v, want %v", c.name, got, c.denied)
		}
	}
}
