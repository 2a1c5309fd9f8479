package server

import (
	"context"
	"encoding/binary"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/minibroker/minibroker/testkit/wiretest"
	"github.com/minibroker/minibroker/wireclient"
)

// delayGate stands in for the failed-authentication delay's timer: each
// delay that begins is sent on began with its length, and ends when the
// test closes release (or the server shuts down).
type delayGate struct {
	began   chan time.Duration
	release chan struct{}
}

// newGatedSASLEnv is a served SASL env whose failed-authentication
// delays are held by the returned gate.
func newGatedSASLEnv(t *testing.T, adjust func(*Config)) (*env, string, *delayGate) {
	t.Helper()
	e := newEnvWith(t, envOptions{config: func(cfg *Config) {
		cfg.SASLUsers = saslUsersForTest
		if adjust != nil {
			adjust(cfg)
		}
	}})
	g := &delayGate{began: make(chan time.Duration, 8), release: make(chan struct{})}
	e.srv.authWait = func(ctx context.Context, d time.Duration) {
		g.began <- d
		select {
		case <-g.release:
		case <-ctx.Done():
		}
	}
	return e, e.serve(), g
}

// awaitDelay waits for the next delay to begin and returns its length.
func (g *delayGate) awaitDelay(t *testing.T) time.Duration {
	t.Helper()
	select {
	case d := <-g.began:
		return d
	case <-time.After(testTimeout):
		t.Fatal("no failed-authentication delay began")
		return 0
	}
}

// requireNothingToRead: c has no bytes to read while the broker holds
// its delay. The broker's goroutine is parked in the gate, so bytes
// written before the delay began would be there already; the short
// deadline only ends the look.
func requireNothingToRead(t *testing.T, c *wireclient.Client) {
	t.Helper()
	require.NoError(t, c.SetDeadline(time.Now().Add(50*time.Millisecond)))
	frame, err := c.ReadFrame()
	var ne net.Error
	require.True(t, errors.As(err, &ne) && ne.Timeout(), "the answer came before the delay ended: %x, %v", frame, err)
}

// readAuthenticateAnswer reads a SaslAuthenticate v2 answer from c and
// requires the connection to close after it.
func readAuthenticateAnswer(t *testing.T, c *wireclient.Client, corr int32) *kmsg.SASLAuthenticateResponse {
	t.Helper()
	require.NoError(t, c.SetDeadline(time.Now().Add(testTimeout)))
	frame, err := c.ReadFrame()
	require.NoError(t, err)
	require.Equal(t, corr, int32(binary.BigEndian.Uint32(frame)))
	resp := kmsg.NewPtrSASLAuthenticateResponse()
	resp.Version = 2
	require.NoError(t, resp.ReadFrom(frame[5:])) // correlation id, header tags
	wiretest.RequireClosed(t, c)
	return resp
}

// TestFailedAuthenticationIsDelayed: a wrong PLAIN password and a wrong
// SCRAM proof are answered SASL_AUTHENTICATION_FAILED only once the
// delay (100 ms by default) has run, and the connection closes after the
// answer, as Kafka's Selector holds back both; each failure is counted
// by its mechanism.
func TestFailedAuthenticationIsDelayed(t *testing.T) {
	t.Parallel()
	e, addr, gate := newGatedSASLEnv(t, nil)

	c := wiretest.Dial(t, addr, "guess")
	require.Equal(t, int16(0), handshake(t, c, MechanismPlain).ErrorCode)
	req := kmsg.NewPtrSASLAuthenticateRequest()
	req.Version, req.SASLAuthBytes = 2, plainToken("alice", "guess")
	require.NoError(t, c.Send(rawRequest(req, 7, "guess")))
	require.Equal(t, DefaultFailedAuthenticationDelay, gate.awaitDelay(t))
	requireNothingToRead(t, c)
	require.Equal(t, int64(1), e.srv.AuthStats().Failures[MechanismPlain], "counted when it fails, before the delay")
	close(gate.release)
	resp := readAuthenticateAnswer(t, c, 7)
	assert.Equal(t, kerr.SaslAuthenticationFailed.Code, resp.ErrorCode)

	// SCRAM: the first message is answered at once, the wrong proof after
	// the delay (released already: it ends as it begins).
	c = wiretest.Dial(t, addr, "guess-scram")
	require.Equal(t, int16(0), handshake(t, c, MechanismSCRAMSHA512).ErrorCode)
	session, first, err := scram.Auth{User: "alice", Pass: "guess"}.AsSha512Mechanism().Authenticate(context.Background(), addr)
	require.NoError(t, err)
	serverFirst := authenticate(t, c, 2, first)
	require.Zero(t, serverFirst.ErrorCode)
	_, final, err := session.Challenge(serverFirst.SASLAuthBytes)
	require.NoError(t, err)
	req.SASLAuthBytes = final
	require.NoError(t, c.Send(rawRequest(req, 9, "guess-scram")))
	require.Equal(t, DefaultFailedAuthenticationDelay, gate.awaitDelay(t))
	resp = readAuthenticateAnswer(t, c, 9)
	assert.Equal(t, kerr.SaslAuthenticationFailed.Code, resp.ErrorCode)

	assert.Equal(t, map[string]int64{MechanismPlain: 1, MechanismSCRAMSHA256: 0, MechanismSCRAMSHA512: 1, "none": 0}, e.srv.AuthStats().Failures)
}

// TestFailedAuthenticationDelaysOnlyItsOwnAnswer: requests pipelined
// before the failing one are answered at once; the failure's answer waits
// for the delay. An unknown mechanism is a failure too (Kafka's
// UnsupportedSaslMechanismException), its answer held back the same way.
func TestFailedAuthenticationDelaysOnlyItsOwnAnswer(t *testing.T) {
	t.Parallel()
	e, addr, gate := newGatedSASLEnv(t, nil)
	c := wiretest.Dial(t, addr, "pipelined")
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Version, hs.Mechanism = 1, "GSSAPI"
	raw := append(rawRequest(apiVersionsRequest(3), 1, "pipelined"), rawRequest(hs, 2, "pipelined")...)
	require.NoError(t, c.Send(raw))
	gate.awaitDelay(t)

	require.NoError(t, c.SetDeadline(time.Now().Add(testTimeout)))
	frame, err := c.ReadFrame()
	require.NoError(t, err)
	require.Equal(t, int32(1), int32(binary.BigEndian.Uint32(frame)), "the ApiVersions answer is not held back")
	requireNothingToRead(t, c)
	close(gate.release)
	require.NoError(t, c.SetDeadline(time.Now().Add(testTimeout)))
	frame, err = c.ReadFrame()
	require.NoError(t, err)
	require.Equal(t, int32(2), int32(binary.BigEndian.Uint32(frame)))
	resp := kmsg.NewPtrSASLHandshakeResponse()
	resp.Version = 1
	require.NoError(t, resp.ReadFrom(frame[4:]))
	assert.Equal(t, kerr.UnsupportedSaslMechanism.Code, resp.ErrorCode)
	wiretest.RequireClosed(t, c)
	assert.Equal(t, int64(1), e.srv.AuthStats().Failures["none"])
}

// TestSuccessfulAuthenticationIsNotDelayed: a right password starts no
// delay and its answer comes at once; nor does a failure with the delay
// off (a negative setting, the command line's 0).
func TestSuccessfulAuthenticationIsNotDelayed(t *testing.T) {
	t.Parallel()
	e, addr, gate := newGatedSASLEnv(t, nil)
	authenticatePlain(t, wiretest.Dial(t, addr, "right"), "alice", "alice-secret")
	c := wiretest.Dial(t, addr, "right-scram")
	require.Equal(t, int16(0), handshake(t, c, MechanismSCRAMSHA256).ErrorCode)
	session, first, err := scram.Auth{User: "bob", Pass: "b:o:b"}.AsSha256Mechanism().Authenticate(context.Background(), addr)
	require.NoError(t, err)
	serverFirst := authenticate(t, c, 2, first)
	_, final, err := session.Challenge(serverFirst.SASLAuthBytes)
	require.NoError(t, err)
	require.Zero(t, authenticate(t, c, 2, final).ErrorCode)
	assert.Empty(t, gate.began, "no delay began")
	assert.Equal(t, map[string]int64{MechanismPlain: 0, MechanismSCRAMSHA256: 0, MechanismSCRAMSHA512: 0, "none": 0}, e.srv.AuthStats().Failures)

	off, addr, gate := newGatedSASLEnv(t, func(cfg *Config) { cfg.FailedAuthenticationDelay = -1 })
	c = wiretest.Dial(t, addr, "guess")
	require.Equal(t, int16(0), handshake(t, c, MechanismPlain).ErrorCode)
	resp := authenticate(t, c, 2, plainToken("alice", "guess"))
	require.Equal(t, kerr.SaslAuthenticationFailed.Code, resp.ErrorCode)
	wiretest.RequireClosed(t, c)
	assert.Empty(t, gate.began, "no delay with the setting off")
	assert.Equal(t, int64(1), off.srv.AuthStats().Failures[MechanismPlain], "counted all the same")
}

// TestFailedAuthenticationDelayEndsAtShutdown: the real timer's wait
// ends when the server shuts down, not after the delay.
func TestFailedAuthenticationDelayEndsAtShutdown(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		waitFor(ctx, time.Hour)
		close(done)
	}()
	cancel()
	select {
	case <-done:
	case <-time.After(testTimeout):
		t.Fatal("the wait outlived its context")
	}
}

// TestAuthStatsWithSASLOff: nothing to count.
func TestAuthStatsWithSASLOff(t *testing.T) {
	t.Parallel()
	assert.Empty(t, newEnv(t).srv.AuthStats().Failures)
}
