package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// The metrics endpoint serves HTTPS with a self-signed certificate unless
// one is mounted. controller-runtime's own fallback makes two RSA-2048 keys
// (a CA and a serving certificate): about 0.1 s of CPU, half of what the
// controller spent starting up. An ECDSA P-256 key does the same job in
// well under a millisecond (BenchmarkSelfSignedMetricsCert), so the
// fallback is ours; a mounted certificate is still watched and preferred.

// selfSignedWhenNoneMounted is a TLSOpts option: when no certificate is
// mounted at certDir, it serves a fresh self-signed ECDSA one.
func selfSignedWhenNoneMounted(certDir string) func(*tls.Config) {
	return func(cfg *tls.Config) {
		if mounted(certDir) || cfg.GetCertificate != nil {
			return
		}
		cert, err := selfSignedCert(time.Now())
		if err != nil {
			return // controller-runtime falls back to its own
		}
		cfg.GetCertificate = func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return cert, nil }
	}
}

func mounted(certDir string) bool {
	for _, name := range []string{"tls.crt", "tls.key"} {
		if _, err := os.Stat(filepath.Join(certDir, name)); err != nil {
			return false
		}
	}
	return true
}

// selfSignedCert is a one-year serving certificate for localhost and
// 127.0.0.1 (what the metrics endpoint is reached by when scraped without
// verification), with an ECDSA P-256 key.
func selfSignedCert(now time.Time) (*tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generating the metrics key: %w", err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, fmt.Errorf("generating the metrics certificate serial: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: "node-rotation-controller metrics"},
		NotBefore:    now.Add(-time.Hour), NotAfter: now.Add(365 * 24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames: []string{"localhost"}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("signing the metrics certificate: %w", err)
	}
	return &tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}
