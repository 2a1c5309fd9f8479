package server

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/testkit/wiretest"
)

// TestSASLHandshakeUnknownMechanism: UNSUPPORTED_SASL_MECHANISM with the
// enabled mechanisms, then the connection closes.
func TestSASLHandshakeUnknownMechanism(t *testing.T) {
	t.Parallel()
	_, addr := newSASLEnv(t, nil)
	c := wiretest.Dial(t, addr, "gssapi")
	resp := handshake(t, c, "GSSAPI")
	require.Equal(t, kerr.UnsupportedSaslMechanism.Code, resp.ErrorCode)
	require.Equal(t, []string{"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"}, resp.SupportedMechanisms)
	wiretest.RequireClosed(t, c)
}

// TestSASLHandshakeStates: with SASL off, or once authenticated, a
// handshake is answered ILLEGAL_SASL_STATE and the connection stays open
// (KafkaApis); a second handshake during an exchange closes it.
func TestSASLHandshakeStates(t *testing.T) {
	t.Parallel()
	plainEnv := newEnv(t)
	c := wiretest.Dial(t, plainEnv.serve(), "off")
	resp := handshake(t, c, MechanismPlain)
	require.Equal(t, kerr.IllegalSaslState.Code, resp.ErrorCode)
	require.Empty(t, resp.SupportedMechanisms)
	require.Len(t, wiretest.Do[*kmsg.MetadataResponse](t, c, metadataRequest(9, nil)).Topics, 2, "still open")

	_, addr := newSASLEnv(t, nil)
	c = wiretest.Dial(t, addr, "done")
	authenticatePlain(t, c, "alice", "alice-secret")
	require.Equal(t, kerr.IllegalSaslState.Code, handshake(t, c, MechanismPlain).ErrorCode)
	require.Len(t, wiretest.Do[*kmsg.MetadataResponse](t, c, metadataRequest(9, nil)).Topics, 2, "still open")

	c = wiretest.Dial(t, addr, "twice")
	require.Equal(t, int16(0), handshake(t, c, MechanismPlain).ErrorCode)
	req := kmsg.NewPtrSASLHandshakeRequest()
	req.Version, req.Mechanism = 1, MechanismPlain
	require.NoError(t, c.Send(rawRequest(req, 2, "twice")))
	wiretest.RequireClosed(t, c)
}

// TestSASLAdvertised: both SASL APIs are in ApiVersions in the versions
// served, with SASL on or off, as Kafka lists them on every listener.
func TestSASLAdvertised(t *testing.T) {
	t.Parallel()
	for _, on := range []bool{false, true} {
		e := newEnvWith(t, envOptions{config: func(cfg *Config) {
			if on {
				cfg.SASLUsers = saslUsersForTest
			}
		}})
		resp := call[*kmsg.ApiVersionsResponse](e, "c", apiVersionsRequest(3))
		got := map[int16][2]int16{}
		for _, k := range resp.ApiKeys {
			got[k.ApiKey] = [2]int16{k.MinVersion, k.MaxVersion}
		}
		require.Equal(t, [2]int16{0, 1}, got[int16(kmsg.SASLHandshake)])
		require.Equal(t, [2]int16{0, 2}, got[int16(kmsg.SASLAuthenticate)])
	}
}
