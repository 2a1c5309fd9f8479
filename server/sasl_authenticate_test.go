package server

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/minibroker/minibroker/testkit/wiretest"
)

// TestSASLAuthenticateFailures: every failed step is answered
// SASL_AUTHENTICATION_FAILED with Kafka's message, then the connection
// closes, and the refusal is logged at Warn with the remote address and
// the user.
func TestSASLAuthenticateFailures(t *testing.T) {
	t.Parallel()
	const plainMsg = "Authentication failed: Invalid username or password"
	scramMsg := func(m string) string {
		return "Authentication failed during authentication due to invalid credentials with SASL mechanism " + m
	}
	for _, tc := range []struct {
		name, mechanism string
		token           []byte
		msg, user, err  string
	}{
		{"plain wrong password", MechanismPlain, plainToken("alice", "wrong"), plainMsg, "alice", "wrong password or unknown user"},
		{"plain unknown user", MechanismPlain, plainToken("mallory", "x"), plainMsg, "mallory", "wrong password or unknown user"},
		{"plain other authzid", MechanismPlain, []byte("admin\x00alice\x00alice-secret"), plainMsg, "alice", "authorization id"},
		{"plain two fields", MechanismPlain, []byte("alice\x00alice-secret"), plainMsg, "", "2 fields"},
		{"plain no user", MechanismPlain, plainToken("", "x"), plainMsg, "", "username not specified"},
		{"plain no password", MechanismPlain, plainToken("alice", ""), plainMsg, "alice", "password not specified"},
		{"plain huge", MechanismPlain, plainToken("alice", strings.Repeat("p", 4096)), plainMsg, "", "more than 2048"},
		{"scram malformed", MechanismSCRAMSHA256, []byte("hello"), scramMsg(MechanismSCRAMSHA256), "", "gs2 header"},
		{"scram unknown user", MechanismSCRAMSHA512, []byte("n,,n=mallory,r=abc"), scramMsg(MechanismSCRAMSHA512), "", "unknown user"},
		{"scram huge", MechanismSCRAMSHA256, []byte("n,,n=alice,r=" + strings.Repeat("x", 100_000)), scramMsg(MechanismSCRAMSHA256), "", "more than 2048"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e, addr := newSASLEnv(t, nil)
			c := wiretest.Dial(t, addr, "bad")
			require.Equal(t, int16(0), handshake(t, c, tc.mechanism).ErrorCode)
			resp := authenticate(t, c, 2, tc.token)
			require.Equal(t, kerr.SaslAuthenticationFailed.Code, resp.ErrorCode)
			require.NotNil(t, resp.ErrorMessage)
			require.Equal(t, tc.msg, *resp.ErrorMessage)
			require.Empty(t, resp.SASLAuthBytes)
			wiretest.RequireClosed(t, c)
			recs := e.logs.Find("sasl authentication failed, closing connection")
			require.Len(t, recs, 1)
			require.Equal(t, slog.LevelWarn, recs[0].Level)
			require.Equal(t, c.LocalAddr(), recs[0].Attrs["remote"])
			require.Equal(t, tc.user, recs[0].Attrs["user"])
			require.Equal(t, tc.mechanism, recs[0].Attrs["mechanism"])
			require.Contains(t, recs[0].Attrs["err"], tc.err)
		})
	}
}

// TestSASLAuthenticateSCRAMWrongPassword: the proof of a wrong password
// fails at the client-final message, with the SCRAM message.
func TestSASLAuthenticateSCRAMWrongPassword(t *testing.T) {
	t.Parallel()
	e, addr := newSASLEnv(t, nil)
	c := wiretest.Dial(t, addr, "guess")
	require.Equal(t, int16(0), handshake(t, c, MechanismSCRAMSHA256).ErrorCode)
	session, first, err := scram.Auth{User: "alice", Pass: "guess"}.AsSha256Mechanism().Authenticate(context.Background(), addr)
	require.NoError(t, err)
	resp := authenticate(t, c, 0, first)
	require.Equal(t, int16(0), resp.ErrorCode)
	require.True(t, strings.HasPrefix(string(resp.SASLAuthBytes), "r="))
	_, final, err := session.Challenge(resp.SASLAuthBytes)
	require.NoError(t, err)
	resp = authenticate(t, c, 0, final)
	require.Equal(t, kerr.SaslAuthenticationFailed.Code, resp.ErrorCode)
	wiretest.RequireClosed(t, c)
	recs := e.logs.Find("sasl authentication failed, closing connection")
	require.Len(t, recs, 1)
	require.Equal(t, "alice", recs[0].Attrs["user"])
	require.Contains(t, recs[0].Attrs["err"], `invalid proof for user "alice"`)
}

// TestSASLAuthenticateStates: with SASL off, or after authentication,
// SaslAuthenticate is answered ILLEGAL_SASL_STATE with Kafka's message
// and the connection stays open.
func TestSASLAuthenticateStates(t *testing.T) {
	t.Parallel()
	off := newEnv(t)
	c := wiretest.Dial(t, off.serve(), "off")
	resp := authenticate(t, c, 1, plainToken("alice", "alice-secret"))
	require.Equal(t, kerr.IllegalSaslState.Code, resp.ErrorCode)
	require.Equal(t, "SaslAuthenticate request received after successful authentication", *resp.ErrorMessage)
	require.Len(t, wiretest.Do[*kmsg.MetadataResponse](t, c, metadataRequest(9, nil)).Topics, 2)

	_, addr := newSASLEnv(t, nil)
	c = wiretest.Dial(t, addr, "done")
	authenticatePlain(t, c, "alice", "alice-secret")
	require.Equal(t, kerr.IllegalSaslState.Code, authenticate(t, c, 2, plainToken("alice", "alice-secret")).ErrorCode)
	require.Len(t, wiretest.Do[*kmsg.MetadataResponse](t, c, metadataRequest(9, nil)).Topics, 2)
}

// TestParsePlain: RFC 4616's three fields.
func TestParsePlain(t *testing.T) {
	t.Parallel()
	_, _, err := parsePlain([]byte("alice\x00alice\x00s\x00cret"))
	require.ErrorContains(t, err, "4 fields")
	u, p, err := parsePlain([]byte("alice\x00alice\x00secret"))
	require.NoError(t, err)
	require.Equal(t, [2]string{"alice", "secret"}, [2]string{u, p})
}

// FuzzParsePlain: no PLAIN message panics, and whatever parses names a
// user and a password without NUL.
func FuzzParsePlain(f *testing.F) {
	f.Add([]byte("\x00alice\x00secret"))
	f.Add([]byte("alice\x00alice\x00secret"))
	f.Add([]byte("\x00\x00"))
	f.Fuzz(func(t *testing.T, msg []byte) {
		u, p, err := parsePlain(msg)
		if err != nil {
			return
		}
		if u == "" || p == "" || strings.ContainsRune(u+p, 0) || len(msg) > maxPlainMessageBytes {
			t.Fatalf("parsed %q into %q, %q", msg, u, p)
		}
	})
}
