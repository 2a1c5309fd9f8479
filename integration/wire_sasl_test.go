package integration

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/minibroker/minibroker/broker"
	"github.com/minibroker/minibroker/testkit/wiretest"
)

// TestWireSASLOverTheBinary runs "minibroker serve --sasl-user": raw
// requests see the codes of the exchange on the wire. A wrong PLAIN
// password is answered SASL_AUTHENTICATION_FAILED, then closed, and
// logged with the user; the right one opens the broker to Metadata; an
// unauthenticated Metadata closes the connection.
func TestWireSASLOverTheBinary(t *testing.T) {
	t.Parallel()
	p := startProcess(t, "--data-dir", t.TempDir(), "--topic", "orders:4", "--sasl-user", "alice:s3cr:et")
	assert.Contains(t, p.logs.String(), "sasl_users=1")

	metadata := kmsg.NewPtrMetadataRequest()
	metadata.Version = 9

	for _, tc := range []struct {
		password string
		code     int16
	}{{"wrong", kerr.SaslAuthenticationFailed.Code}, {"s3cr:et", 0}} {
		c := wiretest.Dial(t, p.Addr, "process-test")
		hs := kmsg.NewPtrSASLHandshakeRequest()
		hs.Version, hs.Mechanism = 1, "PLAIN"
		hsResp := wiretest.Do[*kmsg.SASLHandshakeResponse](t, c, hs)
		require.Equal(t, codeNone, hsResp.ErrorCode)
		require.Equal(t, []string{"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"}, hsResp.SupportedMechanisms)
		auth := kmsg.NewPtrSASLAuthenticateRequest()
		auth.Version, auth.SASLAuthBytes = 2, []byte("\x00alice\x00"+tc.password)
		resp := wiretest.Do[*kmsg.SASLAuthenticateResponse](t, c, auth)
		require.Equal(t, tc.code, resp.ErrorCode, "password %q", tc.password)
		if tc.code != 0 {
			require.Equal(t, "Authentication failed: Invalid username or password", *resp.ErrorMessage)
			wiretest.RequireClosed(t, c)
			eventually(t, func() bool {
				return strings.Contains(p.logs.String(), `msg="sasl authentication failed, closing connection"`) &&
					strings.Contains(p.logs.String(), "user=alice mechanism=PLAIN")
			}, "the refusal is logged with the user")
			continue
		}
		md := wiretest.Do[*kmsg.MetadataResponse](t, c, metadata)
		require.Len(t, md.Topics, 1)
		assert.Equal(t, "orders", *md.Topics[0].Topic)
	}

	// After the refusal above, whose log line this one's may join within
	// the same second (the refusals' log is rate-limited).
	early := wiretest.Dial(t, p.Addr, "process-test")
	require.NoError(t, early.Send(formatted(metadata, 1)))
	wiretest.RequireClosed(t, early)
}

// TestWireSASLFailuresAreCounted: kgo with a wrong PLAIN and a wrong
// SCRAM-SHA-256 password gets SASL_AUTHENTICATION_FAILED (held back by
// the default 100 ms delay, not lost to it), and /metrics counts each
// failure by its mechanism; the right password is served.
func TestWireSASLFailuresAreCounted(t *testing.T) {
	t.Parallel()
	b := startBroker(t, adminConfig, func(cfg *broker.Config) { cfg.SASLUsers = map[string]string{"alice": "alice-secret"} })
	for _, mech := range []sasl.Mechanism{plain.Auth{User: "alice", Pass: "nope"}.AsMechanism(), scram.Auth{User: "alice", Pass: "nope"}.AsSha256Mechanism()} {
		cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.SASL(mech), kgo.RequestRetries(0))
		require.NoError(t, err)
		ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
		_, err = kadm.NewClient(cl).ListTopics(ctx)
		cancel()
		cl.Close()
		require.ErrorIs(t, err, kerr.SaslAuthenticationFailed, mech.Name())
	}
	fams := adminScrape(t, b.adminURL())
	assert.Equal(t, 1.0, adminMetric(fams, "minibroker_failed_authentication_total", "mechanism", "PLAIN"))
	assert.Equal(t, 1.0, adminMetric(fams, "minibroker_failed_authentication_total", "mechanism", "SCRAM-SHA-256"))
	assert.Equal(t, 0.0, adminMetric(fams, "minibroker_failed_authentication_total", "mechanism", "SCRAM-SHA-512"))
	assert.Equal(t, 0.0, adminMetric(fams, "minibroker_failed_authentication_total", "mechanism", "none"))

	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.SASL(plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism()))
	require.NoError(t, err)
	defer cl.Close()
	topics, err := kadm.NewClient(cl).ListTopics(t.Context())
	require.NoError(t, err)
	assert.True(t, topics.Has("orders"))
}
