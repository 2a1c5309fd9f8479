package testutil

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// PKI is a throwaway public key infrastructure for TLS tests: a CA and two
// leaf certificates it signed, valid for an hour either side of now.
type PKI struct {
	// CA is the authority's certificate; Pool trusts it and nothing else.
	CA   *x509.Certificate
	Pool *x509.CertPool
	// Server is a server certificate for 127.0.0.1 and localhost.
	Server tls.Certificate
	// Client is a client certificate (extended key usage ClientAuth).
	Client tls.Certificate

	// CAFile, ServerCertFile and ServerKeyFile are the CA certificate, the
	// server certificate and its PKCS #8 key as PEM files in a directory
	// of the test's, for programs that take file names (--tls-cert).
	CAFile, ServerCertFile, ServerKeyFile string
}

// NewPKI generates a PKI with ECDSA P-256 keys and writes its PEM files
// to a temporary directory that the test removes. It fails t on any error.
func NewPKI(t testing.TB) *PKI {
	t.Helper()
	caKey := newKey(t)
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "minibroker test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatalf("testutil: CA certificate: %v", err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatalf("testutil: CA certificate: %v", err)
	}
	leaf := func(serial int64, name string, usage x509.ExtKeyUsage) (tls.Certificate, *ecdsa.PrivateKey) {
		key := newKey(t)
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: name},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
			IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, DNSNames: []string{"localhost"},
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage},
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		if err != nil {
			t.Fatalf("testutil: %s certificate: %v", name, err)
		}
		return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, key
	}
	p := &PKI{CA: ca, Pool: x509.NewCertPool()}
	p.Pool.AddCert(ca)
	var serverKey *ecdsa.PrivateKey
	p.Server, serverKey = leaf(2, "minibroker test server", x509.ExtKeyUsageServerAuth)
	p.Client, _ = leaf(3, "minibroker test client", x509.ExtKeyUsageClientAuth)

	keyDER, err := x509.MarshalPKCS8PrivateKey(serverKey)
	if err != nil {
		t.Fatalf("testutil: server key: %v", err)
	}
	dir := t.TempDir()
	write := func(name, typ string, der []byte) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
			t.Fatalf("testutil: %v", err)
		}
		return path
	}
	p.CAFile = write("ca.pem", "CERTIFICATE", caDER)
	p.ServerCertFile = write("server.pem", "CERTIFICATE", p.Server.Certificate[0])
	p.ServerKeyFile = write("server.key", "PRIVATE KEY", keyDER)
	return p
}

func newKey(t testing.TB) *ecdsa.PrivateKey {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatalf("testutil: key: %v", err)
	}
	return key
}

// ServerConfig serves the server certificate; with clientAuth, clients
// must present a certificate the CA signed.
func (p *PKI) ServerConfig(clientAuth bool) *tls.Config {
	cfg := &tls.Config{Certificates: []tls.Certificate{p.Server}, MinVersion: tls.VersionTLS12}
	if clientAuth {
		cfg.ClientCAs, cfg.ClientAuth = p.Pool, tls.RequireAndVerifyClientCert
	}
	return cfg
}

// ClientConfig trusts the CA; with withCert, it presents the client
// certificate.
func (p *PKI) ClientConfig(withCert bool) *tls.Config {
	cfg := &tls.Config{RootCAs: p.Pool, MinVersion: tls.VersionTLS12}
	if withCert {
		cfg.Certificates = []tls.Certificate{p.Client}
	}
	return cfg
}
