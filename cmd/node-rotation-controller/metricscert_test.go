package main

import (
	"crypto/ecdsa"
	"crypto/tls"
	"crypto/x509"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// Without a mounted certificate the endpoint serves a self-signed ECDSA
// one for localhost and 127.0.0.1, over a real TLS handshake.
func TestSelfSignedWhenNoneMounted(t *testing.T) {
	cfg := &tls.Config{}
	selfSignedWhenNoneMounted(t.TempDir())(cfg)
	if cfg.GetCertificate == nil {
		t.Fatal("no certificate served")
	}
	l, err := tls.Listen("tcp", "127.0.0.1:0", cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		c, err := l.Accept()
		if err == nil {
			_ = c.(*tls.Conn).Handshake()
			c.Close()
		}
	}()
	conn, err := tls.Dial("tcp", l.Addr().String(), &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // reading a self-signed certificate
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	cert := conn.ConnectionState().PeerCertificates[0]
	if _, ok := cert.PublicKey.(*ecdsa.PublicKey); !ok {
		t.Errorf("key %T, want ECDSA", cert.PublicKey)
	}
	if err := cert.VerifyHostname("localhost"); err != nil {
		t.Error(err)
	}
	if err := cert.VerifyHostname("127.0.0.1"); err != nil {
		t.Error(err)
	}
	if cert.NotAfter.Before(time.Now().Add(364*24*time.Hour)) || cert.ExtKeyUsage[0] != x509.ExtKeyUsageServerAuth {
		t.Errorf("valid until %s, usage %v", cert.NotAfter, cert.ExtKeyUsage)
	}
}

// A mounted certificate is controller-runtime's to watch: the option
// leaves the config alone.
func TestMountedCertificateIsLeftToTheWatcher(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"tls.crt", "tls.key"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cfg := &tls.Config{}
	selfSignedWhenNoneMounted(dir)(cfg)
	if cfg.GetCertificate != nil {
		t.Fatal("a mounted certificate was overridden")
	}
}

// go test -run '^$' -bench SelfSigned ./cmd/node-rotation-controller/
func BenchmarkSelfSignedMetricsCert(b *testing.B) {
	now := time.Now()
	for b.Loop() {
		if _, err := selfSignedCert(now); err != nil {
			b.Fatal(err)
		}
	}
}
