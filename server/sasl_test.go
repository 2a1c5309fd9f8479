package server

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/minibroker/minibroker/internal/testutil"
	"github.com/minibroker/minibroker/protocol"
	"github.com/minibroker/minibroker/testkit/wiretest"
	"github.com/minibroker/minibroker/wireclient"
)

// saslUsersForTest are the users of newSASLEnv.
var saslUsersForTest = map[string]string{"alice": "alice-secret", "bob": "b:o:b"}

// newSASLEnv is a served env with SASL on for saslUsersForTest.
func newSASLEnv(t *testing.T, adjust func(*Config)) (*env, string) {
	t.Helper()
	e := newEnvWith(t, envOptions{config: func(cfg *Config) {
		cfg.SASLUsers = saslUsersForTest
		if adjust != nil {
			adjust(cfg)
		}
	}})
	return e, e.serve()
}

func handshake(t *testing.T, c *wireclient.Client, mechanism string) *kmsg.SASLHandshakeResponse {
	t.Helper()
	req := kmsg.NewPtrSASLHandshakeRequest()
	req.Version, req.Mechanism = 1, mechanism
	return wiretest.Do[*kmsg.SASLHandshakeResponse](t, c, req)
}

func authenticate(t *testing.T, c *wireclient.Client, version int16, token []byte) *kmsg.SASLAuthenticateResponse {
	t.Helper()
	req := kmsg.NewPtrSASLAuthenticateRequest()
	req.Version, req.SASLAuthBytes = version, token
	return wiretest.Do[*kmsg.SASLAuthenticateResponse](t, c, req)
}

func plainToken(user, password string) []byte {
	return []byte("\x00" + user + "\x00" + password)
}

// authenticatePlain runs a successful PLAIN exchange on c.
func authenticatePlain(t *testing.T, c *wireclient.Client, user, password string) {
	t.Helper()
	require.Equal(t, int16(0), handshake(t, c, MechanismPlain).ErrorCode)
	resp := authenticate(t, c, 2, plainToken(user, password))
	require.Equal(t, int16(0), resp.ErrorCode, "%v", resp.ErrorMessage)
}

// TestSASLUnauthenticatedRequestCloses: with SASL on, a Metadata request
// before authentication, or between the handshake and the end of the
// exchange, closes the connection unanswered (SaslServerAuthenticator);
// ApiVersions is answered before the handshake.
func TestSASLUnauthenticatedRequestCloses(t *testing.T) {
	t.Parallel()
	e, addr := newSASLEnv(t, nil)

	c := wiretest.Dial(t, addr, "early")
	vers := wiretest.Do[*kmsg.ApiVersionsResponse](t, c, apiVersionsRequest(3))
	require.Equal(t, int16(0), vers.ErrorCode)
	require.NoError(t, c.Send(rawRequest(metadataRequest(9, nil), 2, "early")))
	wiretest.RequireClosed(t, c)

	c = wiretest.Dial(t, addr, "mid")
	require.Equal(t, int16(0), handshake(t, c, MechanismSCRAMSHA256).ErrorCode)
	require.NoError(t, c.Send(rawRequest(metadataRequest(9, nil), 2, "mid")))
	wiretest.RequireClosed(t, c)

	c = wiretest.Dial(t, addr, "auth-first")
	require.NoError(t, c.Send(rawRequest(kmsg.NewPtrSASLAuthenticateRequest(), 1, "auth-first")))
	wiretest.RequireClosed(t, c)

	warns := e.logs.Find("closing connection")
	require.Len(t, warns, 3)
	require.Equal(t, "sasl: Metadata request before authentication", warns[0].Attrs["err"])
	require.Equal(t, "sasl: Metadata request during the SCRAM-SHA-256 exchange", warns[1].Attrs["err"])
	require.Equal(t, "sasl: SASLAuthenticate request before authentication", warns[2].Attrs["err"])
}

// TestSASLAuthenticatedConnectionIsServed: after a PLAIN or a SCRAM
// exchange, the connection gets Metadata, and the observer learns who it
// is.
func TestSASLAuthenticatedConnectionIsServed(t *testing.T) {
	t.Parallel()
	obs := &recordingObserver{}
	_, addr := newSASLEnv(t, func(cfg *Config) { cfg.Observer = obs })

	c := wiretest.Dial(t, addr, "plain-client")
	for range 2 { // ApiVersions may repeat before the handshake
		require.Equal(t, int16(0), wiretest.Do[*kmsg.ApiVersionsResponse](t, c, apiVersionsRequest(3)).ErrorCode)
	}
	authenticatePlain(t, c, "bob", "b:o:b")
	md := wiretest.Do[*kmsg.MetadataResponse](t, c, metadataRequest(9, nil))
	require.Len(t, md.Topics, 2)

	c2 := wiretest.Dial(t, addr, "scram-client")
	require.Equal(t, []string{"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"}, handshake(t, c2, MechanismSCRAMSHA512).SupportedMechanisms)
	session, first, err := scram.Auth{User: "alice", Pass: "alice-secret"}.AsSha512Mechanism().Authenticate(context.Background(), addr)
	require.NoError(t, err)
	resp := authenticate(t, c2, 1, first)
	require.Equal(t, int16(0), resp.ErrorCode)
	_, final, err := session.Challenge(resp.SASLAuthBytes)
	require.NoError(t, err)
	resp = authenticate(t, c2, 1, final)
	require.Equal(t, int16(0), resp.ErrorCode)
	require.Equal(t, int64(0), resp.SessionLifetimeMillis, "no re-authentication")
	done, _, err := session.Challenge(resp.SASLAuthBytes)
	require.NoError(t, err)
	require.True(t, done)
	md = wiretest.Do[*kmsg.MetadataResponse](t, c2, metadataRequest(9, nil))
	require.Len(t, md.Topics, 2)

	idents := obs.snapshot().idents
	require.Contains(t, idents, ConnInfo{Remote: c.LocalAddr(), ClientID: "plain-client", User: "bob", Mechanism: "PLAIN"})
	require.Contains(t, idents, ConnInfo{Remote: c2.LocalAddr(), ClientID: "scram-client", User: "alice", Mechanism: "SCRAM-SHA-512"})
	require.Contains(t, idents, ConnInfo{Remote: c2.LocalAddr(), ClientID: "scram-client"}, "the client id is known before the user")
}

// TestSASLOverTLS: SASL_SSL: the TLS handshake, then SASL, then Metadata.
func TestSASLOverTLS(t *testing.T) {
	t.Parallel()
	pki := testutil.NewPKI(t)
	obs := &recordingObserver{}
	_, addr := newSASLEnv(t, func(cfg *Config) { cfg.TLS, cfg.Observer = pki.ServerConfig(false), obs })
	c, err := dialTLS(t, addr, pki, false)
	require.NoError(t, err)
	authenticatePlain(t, c, "alice", "alice-secret")
	md := wiretest.Do[*kmsg.MetadataResponse](t, c, metadataRequest(9, nil))
	require.Len(t, md.Topics, 2)
	require.Contains(t, obs.snapshot().idents, ConnInfo{Remote: c.LocalAddr(), ClientID: "tls", User: "alice", Mechanism: "PLAIN", TLS: true})
}

// TestSASLLargeFrameBeforeAuthentication: before authentication a frame
// may be at most 512 KiB (Kafka's sasl.server.max.receive.size): a larger
// announced size closes the connection before its bytes are read or the
// memory budget is touched. After authentication MaxFrameBytes applies.
func TestSASLLargeFrameBeforeAuthentication(t *testing.T) {
	t.Parallel()
	e, addr := newSASLEnv(t, nil)
	c := wiretest.Dial(t, addr, "big")
	require.NoError(t, c.Send(binary.BigEndian.AppendUint32(nil, maxUnauthenticatedFrameBytes+1)))
	wiretest.RequireClosed(t, c)
	require.Equal(t, int64(0), e.srv.InFlightBytes())
	require.NotEmpty(t, e.logs.Find("closing connection"))
	require.Contains(t, e.logs.Find("closing connection")[0].Attrs["err"], "524289")

	// A frame of 512 KiB + 1 after authentication is read and answered:
	// a CreateTopics with a long validate-only list.
	c = wiretest.Dial(t, addr, "big-after")
	authenticatePlain(t, c, "alice", "alice-secret")
	req := kmsg.NewPtrCreateTopicsRequest()
	req.Version, req.ValidateOnly = 4, true
	// Each topic takes more than 200 bytes of the frame.
	for i := range maxUnauthenticatedFrameBytes / 200 {
		req.Topics = append(req.Topics, kmsg.CreateTopicsRequestTopic{Topic: fmt.Sprintf("%s%05d", bytes.Repeat([]byte{'t'}, 200), i), NumPartitions: 1, ReplicationFactor: 1})
	}
	require.Greater(t, len(rawRequest(req, 3, "big-after")), maxUnauthenticatedFrameBytes+4)
	resp := wiretest.Do[*kmsg.CreateTopicsResponse](t, c, req)
	require.Len(t, resp.Topics, len(req.Topics))
}

// TestSASLDeadline: a connection that has not authenticated within
// FrameReadTimeout of its start is closed, even while it keeps sending
// ApiVersions; one that has is not.
func TestSASLDeadline(t *testing.T) {
	t.Parallel()
	e, addr := newSASLEnv(t, func(cfg *Config) { cfg.FrameReadTimeout = 200 * time.Millisecond })
	done := wiretest.Dial(t, addr, "done")
	authenticatePlain(t, done, "alice", "alice-secret")

	c := wiretest.Dial(t, addr, "slow")
	require.Equal(t, int16(0), handshake(t, c, MechanismSCRAMSHA256).ErrorCode)
	wiretest.RequireClosed(t, c)
	eventually(t, testTimeout, func() bool {
		for _, r := range e.logs.Find("closing connection") {
			if r.Attrs["err"] == "sasl: not authenticated within 200ms" && r.Level == slog.LevelWarn {
				return true
			}
		}
		return false
	}, "the deadline is logged")
	md := wiretest.Do[*kmsg.MetadataResponse](t, done, metadataRequest(9, nil))
	require.Len(t, md.Topics, 2, "the authenticated connection outlives the deadline")
}

// TestSASLRefusalsRateLimited: the first failure is logged at once,
// later ones at most once a second with the count since the last line.
func TestSASLRefusalsRateLimited(t *testing.T) {
	t.Parallel()
	now := time.UnixMilli(10_000)
	logs := testutil.NewLogRecorder(nil, nil)
	r := saslRefusals{now: func() time.Time { return now }}
	fail := errors.New("wrong password")
	r.log(logs.Logger(), "alice", "PLAIN", fail)
	r.log(logs.Logger(), "alice", "PLAIN", fail)
	now = now.Add(999 * time.Millisecond)
	r.log(logs.Logger(), "bob", "PLAIN", fail)
	require.Len(t, logs.Records(), 1)
	now = now.Add(time.Millisecond)
	r.log(logs.Logger(), "carol", "SCRAM-SHA-256", fail)
	recs := logs.Records()
	require.Len(t, recs, 2)
	require.Equal(t, map[string]string{"user": "alice", "mechanism": "PLAIN", "refused": "1", "err": "wrong password"}, recs[0].Attrs)
	require.Equal(t, map[string]string{"user": "carol", "mechanism": "SCRAM-SHA-256", "refused": "3", "err": "wrong password"}, recs[1].Attrs)
	require.Equal(t, slog.LevelWarn, recs[1].Level)
}

// TestValidateSASLUsers: empty names and passwords are refused.
func TestValidateSASLUsers(t *testing.T) {
	t.Parallel()
	require.NoError(t, ValidateSASLUsers(nil))
	require.NoError(t, ValidateSASLUsers(map[string]string{"a": "b"}))
	require.EqualError(t, ValidateSASLUsers(map[string]string{"": "b"}), "server: a SASL user has an empty name")
	require.EqualError(t, ValidateSASLUsers(map[string]string{"a": ""}), `server: SASL user "a" has an empty password`)
	cfg := Config{SASLUsers: map[string]string{"a": ""}}
	_, err := New(cfg)
	require.Error(t, err)
}

// TestSASLOffAdmitsEverything: the gate is open without users, and the
// frame limit is MaxFrameBytes.
func TestSASLOffAdmitsEverything(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	from := &peer{}
	require.NoError(t, e.srv.admit(from, kmsg.Metadata))
	require.Equal(t, int32(protocol.DefaultMaxFrameBytes), e.srv.frameLimit(from))
	require.Equal(t, kerr.IllegalSaslState.Code, call[*kmsg.SASLHandshakeResponse](e, "c", &kmsg.SASLHandshakeRequest{Version: 1, Mechanism: "PLAIN"}).ErrorCode)
}
