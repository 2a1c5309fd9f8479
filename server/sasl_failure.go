package server

// A failed SASL authentication (sasl.go): a wrong password or unknown
// user, a malformed SASL message, an unknown mechanism, a request the
// connection's stage does not allow, or a frame over the 512 KiB allowed
// before authentication. Kafka's SaslServerAuthenticator turns each into an
// AuthenticationException, and its Selector then holds back both the
// answer (built, not sent: KafkaChannel.delayCloseOnAuthenticationFailure)
// and the close for connection.failed.authentication.delay.ms (100 ms;
// DelayedAuthenticationFailureClose), after which the answer goes out and
// the connection closes. So does this broker, for
// Settings.FailedAuthenticationDelay: a password guesser gets one guess
// per connection per delay, instead of one per round trip. A successful
// authentication is never delayed. Each failure is counted by mechanism
// (AuthStats, /metrics: minibroker_failed_authentication_total, Kafka's
// failed-authentication-total) and logged at Warn, at most one line a
// second with the number held back.

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"
)

// mechanismNone labels a failure before a mechanism was chosen.
const mechanismNone = "none"

// failureLabels are the mechanisms failures are counted by, in the order
// of authFailures' counters.
var failureLabels = [...]string{MechanismPlain, MechanismSCRAMSHA256, MechanismSCRAMSHA512, mechanismNone}

// authFailures counts failed authentications by mechanism, in the order
// of failureLabels. Safe for concurrent use.
type authFailures [len(failureLabels)]atomic.Int64

func (a *authFailures) add(mechanism string) {
	for i, l := range failureLabels {
		if l == mechanism {
			a[i].Add(1)
			return
		}
	}
	a[len(a)-1].Add(1) // none
}

// AuthStats is what SASL authentication has refused since start.
type AuthStats struct {
	// Failures counts failed authentications by mechanism: "PLAIN",
	// "SCRAM-SHA-256", "SCRAM-SHA-512", and "none" for a connection that
	// failed before a handshake chose one. Empty with SASL off.
	Failures map[string]int64
}

// AuthStats returns the failed authentications counted since start.
func (s *Server) AuthStats() AuthStats {
	st := AuthStats{Failures: map[string]int64{}}
	if s.sasl == nil {
		return st
	}
	for i, l := range failureLabels {
		st.Failures[l] = s.sasl.failures[i].Load()
	}
	return st
}

// authFailed counts and logs a failed authentication of from, then waits
// out FailedAuthenticationDelay (or until shutdown) before the caller
// writes the answer, if any, and closes the connection.
func (s *Server) authFailed(ctx context.Context, logger *slog.Logger, from *peer, err error) {
	mechanism := from.sasl.mechanism
	if mechanism == "" {
		mechanism = mechanismNone
	}
	s.sasl.failures.add(mechanism)
	s.sasl.limiter.log(logger, truncate(from.sasl.user, 64), mechanism, err)
	if s.authDelay > 0 {
		s.authWait(ctx, s.authDelay)
	}
}

// waitFor waits d, or until ctx is done: Server.authWait but in tests.
func waitFor(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
