package server

// Bare SASL tokens: what a client sends after a SaslHandshake v0, before
// SaslAuthenticate existed (KIP-152). Each token is a length-prefixed
// frame that is not a Kafka request, answered with a length-prefixed
// token (empty for PLAIN), as Kafka's SaslServerAuthenticator answers
// them on a connection whose handshake was v0. A token that fails closes
// the connection unanswered, as Kafka does without SaslAuthenticate to
// carry an error code.

import (
	"context"
	"encoding/binary"
	"log/slog"
)

// serveRawToken runs one bare token through the connection's mechanism
// and writes out (the answers still owed) and the answer. It reports
// whether the connection stays open; a failed token closes it after
// FailedAuthenticationDelay (sasl_failure.go).
func (s *Server) serveRawToken(ctx context.Context, d *deadlines, logger *slog.Logger, from *peer, token, out []byte) bool {
	sess := &from.sasl
	answer, done, err := s.saslStep(sess, token)
	if err != nil {
		_ = s.write(d, out)
		s.authFailed(ctx, logger, from, err)
		return false
	}
	if done {
		sess.stage, sess.scram, sess.raw = saslDone, nil, false
		sess.done.Store(true)
		logger.Debug("sasl authenticated", "user", sess.user, "mechanism", sess.mechanism, "handshake", 0)
		s.identified(from)
	}
	out = binary.BigEndian.AppendUint32(out, uint32(len(answer)))
	out = append(out, answer...)
	if err := s.write(d, out); err != nil {
		s.logWriteError(logger, err)
		return false
	}
	return true
}
