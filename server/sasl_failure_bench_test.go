package server

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/minibroker/minibroker/testkit/coretest"
	"github.com/minibroker/minibroker/wireclient"
)

// guessers is how many connections guess passwords at once in
// BenchmarkSASLPasswordGuesses.
const guessers = 8

// BenchmarkSASLPasswordGuesses is a password guesser against a broker
// with SASL on and its default settings: guessers connections at once,
// each guess a connection of its own (a failure closes it) with a
// SaslHandshake and the SaslAuthenticate steps of a wrong password, PLAIN
// or SCRAM-SHA-256 (whose client-final proof costs the guesser PBKDF2's
// 4096 rounds), until SASL_AUTHENTICATION_FAILED. It reports guesses/s
// (docs/reliability.md, SASL):
//
//	go test -run '^$' -bench BenchmarkSASLPasswordGuesses -benchtime 5s ./server
func BenchmarkSASLPasswordGuesses(b *testing.B) {
	for _, mechanism := range []string{MechanismPlain, MechanismSCRAMSHA256} {
		b.Run(mechanism, func(b *testing.B) {
			core := coretest.New(b, coretest.Config{Topics: map[string]int32{"orders": 1}})
			srv, err := New(Config{Coordinator: core.Coordinator, Catalog: core.Catalog, Log: core.Log,
				SASLUsers: map[string]string{"alice": "alice-secret"}})
			require.NoError(b, err)
			addr := serveBench(b, srv)
			var left atomic.Int64
			left.Store(int64(b.N))
			var wg sync.WaitGroup
			b.ResetTimer()
			start := time.Now()
			for range guessers {
				wg.Go(func() {
					for left.Add(-1) >= 0 {
						if err := guess(addr, mechanism); err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "guesses/s")
		})
	}
}

// guess makes one wrong guess at alice's password over a new connection
// to addr, and requires SASL_AUTHENTICATION_FAILED.
func guess(addr, mechanism string) error {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	c, err := wireclient.Dial(ctx, addr, "guesser")
	if err != nil {
		return err
	}
	defer c.Close()
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Version, hs.Mechanism = 1, mechanism
	if _, err := c.Request(ctx, hs); err != nil {
		return err
	}
	auth := kmsg.NewPtrSASLAuthenticateRequest()
	auth.Version, auth.SASLAuthBytes = 2, plainToken("alice", "guess")
	if mechanism != MechanismPlain {
		session, first, err := scram.Auth{User: "alice", Pass: "guess"}.AsSha256Mechanism().Authenticate(ctx, addr)
		if err != nil {
			return err
		}
		auth.SASLAuthBytes = first
		resp, err := c.Request(ctx, auth)
		if err != nil {
			return err
		}
		if _, auth.SASLAuthBytes, err = session.Challenge(resp.(*kmsg.SASLAuthenticateResponse).SASLAuthBytes); err != nil {
			return err
		}
	}
	resp, err := c.Request(ctx, auth)
	if err != nil {
		return err
	}
	if code := resp.(*kmsg.SASLAuthenticateResponse).ErrorCode; code != kerr.SaslAuthenticationFailed.Code {
		return kerr.ErrorForCode(code)
	}
	return nil
}
