package server

// SASL: who a connection is (docs/design.md, "SASL"). With Config.SASLUsers
// set, every connection must authenticate before anything but ApiVersions,
// SaslHandshake and SaslAuthenticate reaches a handler, as on a Kafka
// SASL_PLAINTEXT or SASL_SSL listener (SaslServerAuthenticator):
//
//	begin ---SaslHandshake(known mechanism)---> handshook
//	handshook ---SaslAuthenticate(...)---> ... ---> done
//
// After a SaslHandshake v0 the steps are bare tokens instead of
// SaslAuthenticate requests (sasl_raw.go).
//
// An exchange is bounded: PLAIN takes one SaslAuthenticate, SCRAM two,
// and after them the connection is done or closed. A request the stage
// does not allow closes the connection; so does a failed step, after its
// SASL_AUTHENTICATION_FAILED answer, both held back by
// FailedAuthenticationDelay (sasl_failure.go), and a connection that is
// not done within FrameReadTimeout of its start. The
// handlers are sasl_handshake.go and sasl_authenticate.go; the SCRAM
// messages are sasl_scram.go's.

import (
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// The mechanisms served, in the order SaslHandshake lists them.
const (
	MechanismPlain       = "PLAIN"
	MechanismSCRAMSHA256 = "SCRAM-SHA-256"
	MechanismSCRAMSHA512 = "SCRAM-SHA-512"
)

// mechanisms is what SaslHandshake answers enabled.
var mechanisms = []string{MechanismPlain, MechanismSCRAMSHA256, MechanismSCRAMSHA512}

// maxUnauthenticatedFrameBytes caps a request frame before the connection
// has authenticated: Kafka's sasl.server.max.receive.size (512 KiB), so a
// peer that has proved nothing cannot make the broker read or reserve
// MaxFrameBytes.
const maxUnauthenticatedFrameBytes = 512 << 10

// errUnauthenticated closes a connection that sent a request its SASL
// stage does not allow.
var errUnauthenticated = errors.New("sasl")

// saslUsers holds the configured users' credentials, made once at New.
// It is never modified after, so it needs no lock.
type saslUsers struct {
	plain    map[string][sha256.Size]byte // the password's SHA-256, compared in constant time
	scram256 map[string]scramCredential
	scram512 map[string]scramCredential

	limiter  saslRefusals
	failures authFailures // sasl_failure.go
}

// ValidateSASLUsers checks users: names and passwords must not be empty.
func ValidateSASLUsers(users map[string]string) error {
	for name, password := range users {
		if name == "" {
			return errors.New("server: a SASL user has an empty name")
		}
		if password == "" {
			return fmt.Errorf("server: SASL user %q has an empty password", name)
		}
	}
	return nil
}

// newSASLUsers derives every user's credentials; nil when users is empty
// (SASL off).
func newSASLUsers(users map[string]string) (*saslUsers, error) {
	if len(users) == 0 {
		return nil, nil
	}
	u := &saslUsers{
		plain:    make(map[string][sha256.Size]byte, len(users)),
		scram256: make(map[string]scramCredential, len(users)),
		scram512: make(map[string]scramCredential, len(users)),
		limiter:  saslRefusals{now: time.Now},
	}
	for name, password := range users {
		u.plain[name] = sha256.Sum256([]byte(password))
		var err error
		if u.scram256[name], err = newSCRAMCredential(scramSHA256, password, randomSalt(), scramIterations); err != nil {
			return nil, err
		}
		if u.scram512[name], err = newSCRAMCredential(scramSHA512, password, randomSalt(), scramIterations); err != nil {
			return nil, err
		}
	}
	return u, nil
}

// checkPlain reports whether password is user's, in time that does not
// depend on how much of it matches.
func (u *saslUsers) checkPlain(user, password string) bool {
	want, ok := u.plain[user]
	got := sha256.Sum256([]byte(password))
	return subtle.ConstantTimeCompare(want[:], got[:]) == 1 && ok
}

// saslStage is where a connection is in its authentication.
type saslStage int8

const (
	saslBegin     saslStage = iota // nothing yet: ApiVersions or SaslHandshake
	saslHandshook                  // a mechanism chosen: SaslAuthenticate only
	saslDone                       // authenticated: everything
)

// saslSession is one connection's authentication. Owned by the
// connection goroutine, but for done, which the deadline timer reads.
type saslSession struct {
	stage     saslStage
	mechanism string
	user      string
	scram     *scramExchange // during a SCRAM exchange
	raw       bool           // handshook with v0: bare tokens follow (sasl_raw.go)
	done      atomic.Bool    // stage == saslDone
}

// admit decides whether a request of key may be handled at the
// connection's SASL stage; an error closes the connection unanswered, as
// Kafka's SaslServerAuthenticator does ("Unexpected Kafka request of type
// ... during SASL handshake"). With SASL off every request is admitted.
func (s *Server) admit(from *peer, key kmsg.Key) error {
	if s.sasl == nil || from.sasl.done.Load() {
		return nil
	}
	switch from.sasl.stage {
	case saslBegin:
		if key == kmsg.ApiVersions || key == kmsg.SASLHandshake {
			return nil
		}
		return fmt.Errorf("%w: %s request before authentication", errUnauthenticated, key.Name())
	default:
		if key == kmsg.SASLAuthenticate {
			return nil
		}
		return fmt.Errorf("%w: %s request during the %s exchange", errUnauthenticated, key.Name(), from.sasl.mechanism)
	}
}

// frameLimit is the largest request frame the connection may send now.
func (s *Server) frameLimit(from *peer) int32 {
	if s.sasl != nil && !from.sasl.done.Load() {
		return min(s.maxFrame, maxUnauthenticatedFrameBytes)
	}
	return s.maxFrame
}

// authDeadline closes conn unless it has authenticated within
// FrameReadTimeout; the returned func stops the timer. With SASL off it
// does nothing.
func (s *Server) authDeadline(conn net.Conn, from *peer, logger *slog.Logger) (stop func()) {
	if s.sasl == nil {
		return func() {}
	}
	t := time.AfterFunc(s.frameTimeout, func() {
		if !from.sasl.done.Load() {
			logger.Warn("closing connection", "err", fmt.Errorf("%w: not authenticated within %v", errUnauthenticated, s.frameTimeout))
			conn.Close()
		}
	})
	return func() { t.Stop() }
}

// saslRefusals rate-limits the log of failed authentications: the first
// is logged at once, later ones at most once a second with the number
// refused since the last line, so a peer guessing passwords cannot flood
// the log.
type saslRefusals struct {
	now   func() time.Time // time.Now but in tests
	mu    sync.Mutex
	last  time.Time // guarded by mu
	count int       // guarded by mu
}

func (r *saslRefusals) log(logger *slog.Logger, user, mechanism string, err error) {
	r.mu.Lock()
	r.count++
	now := r.now()
	if now.Sub(r.last) < time.Second {
		r.mu.Unlock()
		return
	}
	count := r.count
	r.last, r.count = now, 0
	r.mu.Unlock()
	logger.Warn("sasl authentication failed, closing connection", "user", user, "mechanism", mechanism, "refused", count, "err", err)
}
