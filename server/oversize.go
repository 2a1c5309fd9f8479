package server

// A request frame over --max-frame-bytes (docs/design.md section 4).
//
// Kafka reads every frame up to socket.request.max.bytes (100 MiB) and
// handles it: a Produce whose batch is over message.max.bytes gets
// MESSAGE_TOO_LARGE (UnifiedLog.analyzeAndValidateRecords), which a client
// reports instead of retrying. A broker that closed the connection instead
// would leave the producer resending the same request for ever, since a
// closed connection is a retriable error. We hold at most MaxFrameBytes of
// a request, so a larger one up to Kafka's 100 MiB is skimmed: its header,
// and for an API that can answer without its body (the oversized entry of
// the dispatch table: Produce), what the answer must name, are decoded as
// the bytes arrive, the rest is read past without being kept, and the API
// answers. Any other API over the limit closes the connection, as Kafka
// closes a frame over socket.request.max.bytes: no other request is that
// large but by mistake or malice. So does a frame over 100 MiB, a negative
// size, and, before SASL authentication, a frame over the 512 KiB limit
// in force then (Kafka's sasl.server.max.receive.size: the peer has
// proved nothing, and reads nothing of ours).
//
// What a skim holds does not depend on the frame's size: skimHoldBytes of
// the budget's frames lane, reserved before anything is read, covers the
// names it keeps; the answer reserves its bound of the work lane as any
// large answer does. The whole frame must still arrive within
// FrameReadTimeout of its first byte. Each skimmed frame is logged once
// at Warn, naming the flag, the API, the version, the client id and the
// remote, at most one line a second with the number held back.

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/protocol"
)

// maxSkimFrameBytes is Kafka's socket.request.max.bytes default (100 MiB):
// the largest frame skimmed; a larger one closes the connection unread,
// as Kafka closes it.
const maxSkimFrameBytes = 100 << 20

// skimHoldBytes is what a skim may keep of a frame (topic names and
// partition indexes: about 8,000 partitions), reserved in the frames lane
// while it runs.
const skimHoldBytes = 64 << 10

// errSkimmed closes a connection whose oversized frame was already logged.
var errSkimmed = errors.New("oversized request frame")

// oversizedFrame is a frame whose size prefix is over the limit in force,
// its bytes still unread, the read deadline set for them. It is the
// *protocol.FrameSizeError a frame over the limit has always been, unless
// the connection skims it (skimmable).
type oversizedFrame struct {
	size, limit int32
}

func (o *oversizedFrame) Error() string { return o.Unwrap().Error() }

// Unwrap makes errors.Is(err, protocol.ErrFrameTooLarge) true.
func (o *oversizedFrame) Unwrap() error { return &protocol.FrameSizeError{Size: o.size, Max: o.limit} }

// skimmable returns the oversized frame readFrame refused with err when
// the connection skims it: one of at most maxSkimFrameBytes over
// MaxFrameBytes, on a connection that has authenticated (or without
// SASL). Any other error is returned as it is, to close the connection.
func (s *Server) skimmable(err error, from *peer) (*oversizedFrame, error) {
	var big *oversizedFrame
	if !errors.As(err, &big) {
		return nil, err
	}
	if big.size > maxSkimFrameBytes || big.limit != s.maxFrame || s.sasl != nil && !from.sasl.done.Load() {
		return nil, err
	}
	return big, nil
}

// serveOversized skims big, the frame after its size prefix in br, into
// r, and returns the answer its API gives (oversizedAnswer) with its
// correlation id. An error closes the connection; it has been logged.
func (s *Server) serveOversized(r *request, br *bufio.Reader, big *oversizedFrame) (kmsg.Response, int32, error) {
	ctx, logger, from, acct := r.ctx, r.logger, r.peer, r.acct
	*r = request{ctx: ctx, logger: logger, peer: from, acct: acct}
	if acct != nil {
		wait, cancel := context.WithTimeout(ctx, s.frameTimeout)
		held, err := s.mem.frames.acquire(wait, skimHoldBytes)
		cancel()
		if err != nil {
			logger.Warn("closing connection", "err", fmt.Errorf("%w: %d bytes to skim a request not free within %v", errBudget, skimHoldBytes, s.frameTimeout))
			return nil, 0, errSkimmed
		}
		acct.frames += held
	}
	sk := protocol.NewSkimmer(br, big.size)
	h, err := sk.Header()
	if err != nil {
		return nil, 0, s.skimFailed(logger, err, big)
	}
	r.key, r.version = kmsg.Key(h.APIKey), h.APIVersion
	if h.ClientID != nil {
		r.clientID = *h.ClientID
	}
	answer := s.oversizedAnswer(h.APIKey)
	if answer == nil || !protocol.Supported(h.APIKey, h.APIVersion) {
		s.logOversized(r, big, "closing connection as Kafka closes one over socket.request.max.bytes")
		return nil, 0, errSkimmed
	}
	resp, err := answer(s, r, sk, big.size)
	switch {
	case errors.Is(err, errAcksZeroFailed):
		s.logOversized(r, big, "closing connection: with acks 0 nothing carries its error")
		return nil, 0, errSkimmed
	case err == nil && r.failed != nil: // the answer's memory did not come
		logger.Warn("closing connection", "err", r.failed)
		return nil, 0, errSkimmed
	case err == nil:
		err = sk.Discard() // what follows the body: Kafka ignores it too
	}
	if err != nil {
		return nil, 0, s.skimFailed(logger, err, big)
	}
	s.logOversized(r, big, "read and discarded, answered "+CodeName(r.code))
	return resp, h.CorrelationID, nil
}

// oversizedAnswer returns the dispatch table's oversized entry for key,
// nil when the API has none.
func (s *Server) oversizedAnswer(key int16) oversizedHandler {
	if key < 0 || int(key) >= len(s.handlers) {
		return nil
	}
	return s.handlers[key].oversized
}

// skimFailed logs why a skim ended, as a read error is logged: a peer
// that vanished at Debug, a stall past FrameReadTimeout or a malformed
// request at Warn. It returns errSkimmed.
func (s *Server) skimFailed(logger *slog.Logger, err error, big *oversizedFrame) error {
	switch {
	case isTimeout(err):
		s.logReadError(logger, fmt.Errorf("%w: a frame of %d bytes not read within %v", errFrameTimeout, big.size, s.frameTimeout))
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF), errors.Is(err, net.ErrClosed):
		s.logReadError(logger, err)
	default:
		logger.Warn("closing connection", "err", fmt.Errorf("%w of %d bytes: %w", errSkimmed, big.size, err))
	}
	return errSkimmed
}

// logOversized logs a frame over --max-frame-bytes once, with what
// became of it: at most one line a second, with the number held back.
func (s *Server) logOversized(r *request, big *oversizedFrame, outcome string) {
	if n, ok := s.oversizeLog.allow(time.Now()); ok {
		r.logger.Warn("request over --max-frame-bytes, "+outcome,
			"api", kmsg.NameForKey(int16(r.key)), "version", r.version, "client_id", r.clientID,
			"bytes", big.size, "max_frame_bytes", big.limit, "suppressed", n)
	}
}
