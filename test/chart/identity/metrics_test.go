//go:build e2e

package identity_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// metricsCertSecret is the Secret the install names in metrics.certSecret;
// the chart mounts it where the binary reads its serving certificate.
const metricsCertSecret = "nrc-identity-metrics-tls"

// servingCert stands for that Secret: the test writes a CA-signed
// certificate into the controller's $TMPDIR at the chart's mount path
// (relative to the container's /tmp), so the binary run here serves it as
// the Pod would.
type servingCert struct {
	tmpdir string
	pool   *x509.CertPool
	server string // the name the certificate is for: the metrics Service's
}

func (w *world) mountedCert(t *testing.T) servingCert {
	t.Helper()
	d := w.deployment(t)
	var volume string
	for _, v := range d.Spec.Template.Spec.Volumes {
		if v.Secret != nil && v.Secret.SecretName == metricsCertSecret {
			volume = v.Name
		}
	}
	var mountPath string
	for _, c := range d.Spec.Template.Spec.Containers {
		for _, m := range c.VolumeMounts {
			if m.Name == volume {
				mountPath = m.MountPath
			}
		}
	}
	rel, ok := strings.CutPrefix(mountPath, "/tmp/")
	if volume == "" || !ok {
		t.Fatalf("the chart mounts Secret %s at %q: want a path under the container's /tmp (its TMPDIR)", metricsCertSecret, mountPath)
	}
	server := fmt.Sprintf("%s-metrics.%s.svc", release, namespace)
	caPEM, certPEM, keyPEM := issue(t, server)
	tmp := t.TempDir()
	dir := filepath.Join(tmp, rel)
	must(t, os.MkdirAll(dir, 0o755), "the certificate directory")
	must(t, os.WriteFile(filepath.Join(dir, "tls.crt"), certPEM, 0o600), "tls.crt")
	must(t, os.WriteFile(filepath.Join(dir, "tls.key"), keyPEM, 0o600), "tls.key")
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	return servingCert{tmpdir: tmp, pool: pool, server: server}
}

// issue makes a CA and a serving certificate it signed for server and
// 127.0.0.1, as cert-manager would.
func issue(t *testing.T, server string) (caPEM, certPEM, keyPEM []byte) {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	must(t, err, "CA key")
	now := time.Now()
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "nrc-identity test CA"}, NotBefore: now.Add(-time.Hour),
		NotAfter: now.Add(time.Hour), IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	must(t, err, "CA certificate")
	ca, err := x509.ParseCertificate(caDER)
	must(t, err, "CA certificate")
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	must(t, err, "serving key")
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: server}, DNSNames: []string{server},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	must(t, err, "serving certificate")
	keyDER, err := x509.MarshalECPrivateKey(key)
	must(t, err, "serving key")
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
}

// expectMetricsAuth scrapes the controller's /metrics as Prometheus would,
// verifying the mounted certificate: no token is 401, a token whose user
// may not get /metrics is 403, one that may is 200 with the controller's
// metrics. The chart turns metrics.auth on by default.
func (w *world) expectMetricsAuth(t *testing.T, port int, cert servingCert) {
	t.Helper()
	reader, stranger := w.metricsTokens(t)
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: cert.pool, ServerName: cert.server, MinVersion: tls.VersionTLS12}}}
	url := fmt.Sprintf("https://127.0.0.1:%d/metrics", port)
	get := func(token string) (int, string, error) {
		req, err := http.NewRequestWithContext(w.ctx, http.MethodGet, url, nil)
		if err != nil {
			return 0, "", err
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := hc.Do(req)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body), err
	}
	// The endpoint comes up with the manager; the first scrape may be early.
	eventually(t, time.Minute, "the metrics endpoint answering over the mounted certificate", func() (bool, error) {
		_, _, err := get("")
		return err == nil, err
	})
	for _, c := range []struct {
		who   string
		token string
		want  int
	}{{"no token", "", http.StatusUnauthorized}, {"a token without get /metrics", stranger, http.StatusForbidden}, {"a token with get /metrics", reader, http.StatusOK}} {
		code, body, err := get(c.token)
		switch {
		case err != nil:
			t.Errorf("scrape with %s: %v", c.who, err)
		case code != c.want:
			t.Errorf("scrape with %s: HTTP %d, want %d: %.200s", c.who, code, c.want, body)
		case code == http.StatusOK && !strings.Contains(body, "noderotation_"):
			t.Errorf("scrape with %s: no noderotation_ metric in %.300s", c.who, body)
		default:
			t.Logf("scrape with %s: HTTP %d", c.who, code)
		}
	}
}

// metricsTokens are bound tokens of two ServiceAccounts: one a
// ClusterRole lets get the non-resource URL /metrics, one nothing does.
func (w *world) metricsTokens(t *testing.T) (reader, stranger string) {
	t.Helper()
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "nrc-identity-metrics-reader"},
		Rules: []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}}}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "nrc-identity-metrics-reader"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "metrics-reader", Namespace: namespace}}}
	objs := []client.Object{
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "metrics-reader", Namespace: namespace}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "metrics-stranger", Namespace: namespace}},
		role, binding,
	}
	for _, o := range objs {
		// an earlier run's, its namespace kept: take it as it is
		if err := w.admin.Create(w.ctx, o); !apierrors.IsAlreadyExists(err) {
			must(t, err, "creating "+o.GetName())
		}
	}
	t.Cleanup(func() {
		for _, o := range objs {
			_ = w.admin.Delete(context.Background(), o)
		}
	})
	cs, err := kubernetes.NewForConfig(w.config)
	must(t, err, "clientset")
	token := func(sa string) string {
		tr, err := cs.CoreV1().ServiceAccounts(namespace).CreateToken(w.ctx, sa, &authenticationv1.TokenRequest{
			Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To(int64(3600))}}, metav1.CreateOptions{})
		must(t, err, "a token for "+sa)
		return tr.Status.Token
	}
	return token("metrics-reader"), token("metrics-stranger")
}
