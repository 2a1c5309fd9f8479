package integration

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/testkit/wiretest"
)

// TestWireSASLOverTheBinary runs "minibroker serve --sasl-user": raw
// requests see the codes of the exchange on the wire. An unauthenticated
// Metadata closes the connection; a wrong PLAIN password is answered
// SASL_AUTHENTICATION_FAILED, then closed, and logged with the user; the
// right one opens the broker to Metadata.
func TestWireSASLOverTheBinary(t *testing.T) {
	t.Parallel()
	p := startProcess(t, "--data-dir", t.TempDir(), "--topic", "orders:4", "--sasl-user", "alice:s3cr:et")
	assert.Contains(t, p.logs.String(), "sasl_users=1")

	metadata := kmsg.NewPtrMetadataRequest()
	metadata.Version = 9

	early := wiretest.Dial(t, p.Addr, "process-test")
	require.NoError(t, early.Send(formatted(metadata, 1)))
	wiretest.RequireClosed(t, early)

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
}
