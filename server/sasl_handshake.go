package server

// SaslHandshake (key 17), versions 0-1.
//
// v1 names the mechanism the SaslAuthenticate requests that follow use
// (kgo, librdkafka and Kafka's own clients send v1 to a broker that
// offers it). After v0 the client sends bare SASL tokens instead, without
// Kafka framing (sasl_raw.go). librdkafka (kcat) enables SASL at all only
// when the advertised range holds v0.
//
// With SASL on, a handshake at the start of a connection picks the
// mechanism; an unknown one is answered UNSUPPORTED_SASL_MECHANISM with the
// enabled ones, then the connection closes (SaslServerAuthenticator
// handleHandshakeRequest). Once authenticated, or with SASL off, a
// handshake is answered ILLEGAL_SASL_STATE and the connection stays open,
// as Kafka's KafkaApis answers one that reaches it.

import (
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (s *Server) handleSASLHandshake(r *request, req *kmsg.SASLHandshakeRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.SASLHandshakeResponse)
	if s.sasl == nil || r.sasl.stage != saslBegin {
		r.setCode(&resp.ErrorCode, kerr.IllegalSaslState.Code)
		return resp
	}
	resp.SupportedMechanisms = slices.Clone(mechanisms)
	if !slices.Contains(mechanisms, req.Mechanism) {
		r.setCode(&resp.ErrorCode, kerr.UnsupportedSaslMechanism.Code)
		r.closeAfter = fmt.Errorf("%w: unsupported mechanism %q", errUnauthenticated, truncate(req.Mechanism, 64))
		return resp
	}
	r.sasl.stage, r.sasl.mechanism, r.sasl.raw = saslHandshook, req.Mechanism, req.Version == 0
	switch req.Mechanism {
	case MechanismSCRAMSHA256:
		r.sasl.scram = &scramExchange{mech: scramSHA256, lookup: lookupIn(s.sasl.scram256), nonce: scramNonce}
	case MechanismSCRAMSHA512:
		r.sasl.scram = &scramExchange{mech: scramSHA512, lookup: lookupIn(s.sasl.scram512), nonce: scramNonce}
	}
	return resp
}

func lookupIn(m map[string]scramCredential) func(string) (scramCredential, bool) {
	return func(user string) (scramCredential, bool) {
		c, ok := m[user]
		return c, ok
	}
}

// truncate shortens a peer's string for a log line.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
