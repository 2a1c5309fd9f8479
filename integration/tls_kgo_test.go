package integration

import (
	"context"
	"crypto/tls"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/internal/testutil"
	"github.com/minibroker/minibroker/testkit/wiretest"
)

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
	sync := kgoRequest[*kmsg.SyncGroupResponse](t, cl, wiretest.SyncRequest(5, group, joined.MemberID, joined.Generation))
	require.Equal(t, codeNone, sync.ErrorCode)
	assert.Equal(t, []string{"orders-0", "orders-1", "orders-2", "orders-3"}, wiretest.Assignment(t, sync.MemberAssignment))
	hb := kgoRequest[*kmsg.HeartbeatResponse](t, cl, wiretest.HeartbeatRequest(4, group, joined.MemberID, joined.Generation))
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
	pki := testutil.NewPKI(t)
	p := startProcess(t, "--data-dir", t.TempDir(), "--topic", "orders:4",
		"--tls-cert", pki.ServerCertFile, "--tls-key", pki.ServerKeyFile)
	assert.Contains(t, p.logs.String(), "tls=true")

	kgoJoinSyncHeartbeat(t, tlsKgoClient(t, p.Addr, pki.ClientConfig(false)), "tls-group")

	plain := wiretest.Dial(t, p.Addr, "process-test")
	require.NoError(t, plain.Send(formatted(apiVersionsRequest(3), 1)))
	wiretest.RequireClosed(t, plain)

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
	pki := testutil.NewPKI(t)
	p := startProcess(t, "--data-dir", t.TempDir(), "--topic", "orders:4",
		"--tls-cert", pki.ServerCertFile, "--tls-key", pki.ServerKeyFile, "--tls-client-ca", pki.CAFile)

	kgoJoinSyncHeartbeat(t, tlsKgoClient(t, p.Addr, pki.ClientConfig(true)), "mtls-group")

	tlsRefused(t, tlsKgoClient(t, p.Addr, pki.ClientConfig(false)))
	eventually(t, func() bool { return strings.Contains(p.logs.String(), "tls handshake failed") },
		"the client without a certificate is logged")
	assert.Contains(t, p.logs.String(), "certificate")
}
