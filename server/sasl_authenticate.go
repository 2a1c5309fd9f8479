package server

// SaslAuthenticate (key 36), versions 0-2.
//
// v0 carries one SASL token each way; v1 adds the session lifetime to the
// response (0 here: no re-authentication, KIP-368, as Kafka with
// connections.max.reauth.ms unset); v2 is flexible.
//
// After a SaslHandshake, PLAIN takes one request and SCRAM two
// (sasl_scram.go). A failed step (a wrong password, an unknown user, a
// malformed or oversized message) is answered SASL_AUTHENTICATION_FAILED
// with Kafka's message, logged at Warn (rate-limited), and the connection
// closes after the answer, both held back by FailedAuthenticationDelay,
// as SaslServerAuthenticator and Kafka's Selector do (sasl_failure.go). Once
// authenticated, or with SASL off, a request is answered
// ILLEGAL_SASL_STATE and the connection stays open (KafkaApis).

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// maxPlainMessageBytes bounds a PLAIN message: authzid, user and password.
const maxPlainMessageBytes = 2048

// errSASLFailed is a step that failed.
var errSASLFailed = errors.New("sasl authentication failed")

func (s *Server) handleSASLAuthenticate(r *request, req *kmsg.SASLAuthenticateRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.SASLAuthenticateResponse)
	if s.sasl == nil || r.sasl.stage != saslHandshook {
		msg := "SaslAuthenticate request received after successful authentication"
		r.setCode(&resp.ErrorCode, kerr.IllegalSaslState.Code)
		resp.ErrorMessage = &msg
		return resp
	}
	sess := &r.sasl
	out, done, err := s.saslStep(sess, req.SASLAuthBytes)
	if err != nil {
		msg := "Authentication failed during authentication due to invalid credentials with SASL mechanism " + sess.mechanism
		if sess.mechanism == MechanismPlain {
			msg = "Authentication failed: Invalid username or password"
		}
		r.setCode(&resp.ErrorCode, kerr.SaslAuthenticationFailed.Code)
		resp.ErrorMessage = &msg
		r.closeAfter = err // counted, logged and delayed by the connection (sasl_failure.go)
		return resp
	}
	resp.SASLAuthBytes = out
	if done {
		sess.stage, sess.scram = saslDone, nil
		sess.done.Store(true)
		r.logger.Debug("sasl authenticated", "user", sess.user, "mechanism", sess.mechanism)
		s.identified(r.peer)
	}
	return resp
}

// saslStep runs one SaslAuthenticate token through the mechanism: the
// answer's token and whether the client is now authenticated. sess.user
// is set as soon as the token names one, for the log of a failure.
func (s *Server) saslStep(sess *saslSession, token []byte) (out []byte, done bool, err error) {
	if sess.scram == nil { // PLAIN
		user, password, err := parsePlain(token)
		sess.user = user
		if err != nil {
			return nil, false, err
		}
		if !s.sasl.checkPlain(user, password) {
			return nil, false, fmt.Errorf("%w: wrong password or unknown user", errSASLFailed)
		}
		return nil, true, nil
	}
	if !sess.scram.sentFirst {
		out, err := sess.scram.first(token)
		sess.user = sess.scram.user
		if err != nil {
			return nil, false, fmt.Errorf("%w: %w", errSASLFailed, err)
		}
		return out, false, nil
	}
	out, err = sess.scram.final(token)
	if err != nil {
		return nil, false, fmt.Errorf("%w: %w", errSASLFailed, err)
	}
	return out, true, nil
}

// parsePlain splits a PLAIN message (RFC 4616): authzid NUL user NUL
// password. The authorization id must be empty or the user, as Kafka's
// PlainSaslServer requires.
func parsePlain(msg []byte) (user, password string, err error) {
	if len(msg) > maxPlainMessageBytes {
		return "", "", fmt.Errorf("%w: PLAIN message of %d bytes, more than %d", errSASLFailed, len(msg), maxPlainMessageBytes)
	}
	parts := bytes.Split(msg, []byte{0})
	if len(parts) != 3 {
		return "", "", fmt.Errorf("%w: PLAIN message with %d fields, want 3", errSASLFailed, len(parts))
	}
	authzid, u, p := string(parts[0]), string(parts[1]), string(parts[2])
	switch {
	case u == "":
		return "", "", fmt.Errorf("%w: username not specified", errSASLFailed)
	case p == "":
		return u, "", fmt.Errorf("%w: password not specified", errSASLFailed)
	case authzid != "" && authzid != u:
		return u, "", fmt.Errorf("%w: authorization id %q differs from the user", errSASLFailed, truncate(authzid, 64))
	}
	return u, p, nil
}
