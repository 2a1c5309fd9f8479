package integration

import (
	"context"
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
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// tlsFiles is a test PKI written as PEM files: a CA, a server certificate
// for 127.0.0.1 and a client certificate, both signed by the CA.
type tlsFiles struct {
	CA, ServerCert, ServerKey string
	pool                      *x509.CertPool
	client                    tls.Certificate
}

func newTLSFiles(t *testing.T) tlsFiles {
	t.Helper()
	dir := t.TempDir()
	newKey := func() *ecdsa.PrivateKey {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		require.NoError(t, err)
		return k
	}
	caKey := newKey()
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "minibroker test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	require.NoError(t, err)
	ca, err := x509.ParseCertificate(caDER)
	require.NoError(t, err)
	leaf := func(serial int64, usage x509.ExtKeyUsage) ([]byte, *ecdsa.PrivateKey) {
		key := newKey()
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: "minibroker test"},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
			IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, KeyUsage: x509.KeyUsageDigitalSignature,
			ExtKeyUsage: []x509.ExtKeyUsage{usage},
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		require.NoError(t, err)
		return der, key
	}
	serverDER, serverKey := leaf(2, x509.ExtKeyUsageServerAuth)
	clientDER, clientKey := leaf(3, x509.ExtKeyUsageClientAuth)
	write := func(name, typ string, der []byte) string {
		path := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600))
		return path
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(serverKey)
	require.NoError(t, err)
	f := tlsFiles{
		CA:         write("ca.pem", "CERTIFICATE", caDER),
		ServerCert: write("server.pem", "CERTIFICATE", serverDER),
		ServerKey:  write("server.key", "PRIVATE KEY", keyDER),
		pool:       x509.NewCertPool(),
		client:     tls.Certificate{Certificate: [][]byte{clientDER}, PrivateKey: clientKey},
	}
	f.pool.AddCert(ca)
	return f
}

// clientTLS trusts the test CA and, with withCert, presents the client
// certificate.
func (f tlsFiles) clientTLS(withCert bool) *tls.Config {
	cfg := &tls.Config{RootCAs: f.pool, MinVersion: tls.VersionTLS12}
	if withCert {
		cfg.Certificates = []tls.Certificate{f.client}
	}
	return cfg
}

// tlsKgoClient is a kgo client for addr over TLS with cfg (nil:
// plaintext) that gives up quickly: these tests expect refusals.
func tlsKgoClient(t *testing.T, addr string, cfg *tls.Config) *kgo.Client {
	t.Helper()
	opts := []kgo.Opt{kgo.SeedBrokers(addr), kgo.ClientID("tls-test"), kgo.RequestRetries(1),
		kgo.RetryTimeout(2 * time.Second), kgo.RetryBackoffFn(func(int) time.Duration { return 50 * time.Millisecond })}
	if cfg != nil {
		opts = append(opts, kgo.DialTLSConfig(cfg))
	}
	cl, err := kgo.NewClient(opts...)
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	return cl
}

// kgoJoinSyncHeartbeat joins group through kgo.Client.Request as kgo's
// group consumer does (MEMBER_ID_REQUIRED, then the join with the id),
// syncs and heartbeats, requiring success.
func kgoJoinSyncHeartbeat(t *testing.T, cl *kgo.Client, group string) {
	t.Helper()
	first := kgoRequest[*kmsg.JoinGroupResponse](t, cl, joinRequest(9, group, "", "orders"))
	require.Equal(t, codeMemberIDRequired, first.ErrorCode)
	joined := kgoRequest[*kmsg.JoinGroupResponse](t, cl, joinRequest(9, group, first.MemberID, "orders"))
	require.Equal(t, codeNone, joined.ErrorCode)
	sync := kgoRequest[*kmsg.SyncGroupResponse](t, cl, syncRequest(5, group, joined.MemberID, joined.Generation))
	require.Equal(t, codeNone, sync.ErrorCode)
	assert.Equal(t, []string{"orders-0", "orders-1", "orders-2", "orders-3"}, decodeAssignment(t, sync.MemberAssignment))
	hb := kgoRequest[*kmsg.HeartbeatResponse](t, cl, heartbeatRequest(4, group, joined.MemberID, joined.Generation))
	require.Equal(t, codeNone, hb.ErrorCode)
}

// tlsRefused asserts that a request through cl fails (the broker closed
// the connection during the TLS handshake).
func tlsRefused(t *testing.T, cl *kgo.Client) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
	defer cancel()
	_, err := cl.Request(ctx, apiVersionsRequest(3))
	require.Error(t, err, "the broker must refuse this client")
}

// TestTLSListener runs "minibroker serve" with --tls-cert and --tls-key:
// a kgo client over TLS joins, syncs and heartbeats (kgo.DialTLSConfig,
// through ApiVersions, FindCoordinator and Metadata, all over TLS); a
// plaintext raw client and a plaintext kgo client are closed, and the
// broker logs a warning for each.
func TestTLSListener(t *testing.T) {
	t.Parallel()
	files := newTLSFiles(t)
	p := startProcess(t, "--data-dir", t.TempDir(), "--topic", "orders:4",
		"--tls-cert", files.ServerCert, "--tls-key", files.ServerKey)
	assert.Contains(t, p.logs.String(), "tls=true")

	kgoJoinSyncHeartbeat(t, tlsKgoClient(t, p.Addr, files.clientTLS(false)), "tls-group")

	plain := p.dial(t)
	require.NoError(t, plain.Send(formatted(apiVersionsRequest(3), 1)))
	requireEOF(t, plain)

	tlsRefused(t, tlsKgoClient(t, p.Addr, nil))
	eventually(t, func() bool { return strings.Count(p.logs.String(), "tls handshake failed") >= 2 },
		"each plaintext client is logged")
	assert.Contains(t, p.logs.String(), "first record does not look like a TLS handshake")
	assert.NotContains(t, p.logs.String(), "listening on a non-loopback address")
}

// TestTLSClientCertificateRequired runs the broker with --tls-client-ca
// as well: a kgo client presenting a certificate the CA signed is served;
// one without a certificate is refused and logged.
func TestTLSClientCertificateRequired(t *testing.T) {
	t.Parallel()
	files := newTLSFiles(t)
	p := startProcess(t, "--data-dir", t.TempDir(), "--topic", "orders:4",
		"--tls-cert", files.ServerCert, "--tls-key", files.ServerKey, "--tls-client-ca", files.CA)

	kgoJoinSyncHeartbeat(t, tlsKgoClient(t, p.Addr, files.clientTLS(true)), "mtls-group")

	tlsRefused(t, tlsKgoClient(t, p.Addr, files.clientTLS(false)))
	eventually(t, func() bool { return strings.Contains(p.logs.String(), "tls handshake failed") },
		"the client without a certificate is logged")
	assert.Contains(t, p.logs.String(), "certificate")
}
