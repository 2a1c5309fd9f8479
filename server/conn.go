package server

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"runtime/debug"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/protocol"
)

// connReadBufferBytes sizes each connection's read buffer. It holds many
// small pipelined requests at once (a Heartbeat is under 100 bytes), so
// that their answers can share a write, yet 10,000 connections cost only
// 40 MiB of it. A frame larger than the buffer is read straight into a
// buffer of its own, which grows only as its bytes arrive
// (protocol.ReadFrame).
const connReadBufferBytes = 4 << 10

// coalesceBytes caps the answers collected for one write: past it they go
// out even if more requests are already buffered.
const coalesceBytes = 16 << 10

// keepOutputBytes is the largest output buffer a connection keeps between
// writes; a larger one (a big Metadata answer) is dropped after its write,
// so an idle connection never pins it.
const keepOutputBytes = 4 << 10

// errIdle and errFrameTimeout say why readFrame gave up on a peer.
var (
	errIdle         = errors.New("connection idle")
	errFrameTimeout = errors.New("request frame not completed in time")
)

// request is what a handler knows about the request beyond its body. It is
// owned by the connection goroutine, which handles each frame in the same
// one (handleFrame): nothing keeps it once the answer is written.
type request struct {
	*peer // who sent it: one per connection, shared by its requests

	ctx      context.Context
	logger   *slog.Logger // connLogger's: it carries "remote" already
	clientID string
	key      kmsg.Key
	version  int16
	// code is the first non-zero error code the handler answered with
	// (setCode), what the observer is told the request ended with.
	code int16
	// acct is what the connection holds of the memory budget (memory.go);
	// nil for a handler called directly, which then reserves nothing.
	acct *account
	// answerBytes, when set, bounds the encoded answer, so that the
	// output buffer is grown once for it.
	answerBytes int64
	// failed, when set, closes the connection instead of answering.
	failed error
	// closeAfter, when set, closes the connection once the answer is
	// written, which a failed SASL authentication holds back
	// (sasl_failure.go).
	closeAfter error
	// retain, when set, keeps the frame out of the buffer pool: a control
	// saw the request and may keep it, and its bytes alias the frame
	// (control.go).
	retain bool
}

// peer names the client at the other end of a connection.
type peer struct {
	remote string // its address, "127.0.0.1:54321"
	host   string // its host as Kafka reports it: "/127.0.0.1"

	clientID string      // the last request header's client id
	lastID   *string     // the last non-null one as parsed, reused while it repeats
	sasl     saslSession // who it authenticated as (sasl.go)
}

// reserve takes n bytes of the memory budget's work lane for what the
// handler is about to build, waiting up to FrameReadTimeout for them, and
// only while the connection holds no work (memory.go). An answer of at
// most smallFrameBytes needs none. It returns false when the bytes did
// not come: the handler answers anything, and the connection is closed
// instead. Only handlers of APIs with the largeAnswer trait wait here
// (TestReservingHandlersHaveTheLargeAnswerTrait).
func (r *request) reserve(n int64) bool {
	if _, err := r.acct.reserve(r.ctx, n); err != nil {
		r.failed = fmt.Errorf("%w: %d bytes for an answer not free within %v", errBudget, n, r.acct.wait)
		return false
	}
	r.answerBytes = max(r.answerBytes, n)
	return true
}

// borrow is reserve for memory the handler needs only while it runs (a
// decompressor): done gives it back. ok is false as for reserve.
func (r *request) borrow(n int64) (done func(), ok bool) {
	got, err := r.acct.reserve(r.ctx, n)
	if err != nil {
		r.failed = fmt.Errorf("%w: %d bytes to decompress not free within %v", errBudget, n, r.acct.wait)
		return func() {}, false
	}
	return func() { r.acct.give(got) }, true
}

// keep shrinks the request's work reservation to n bytes, once the
// handler knows it holds no more: the rest goes back to the budget.
func (r *request) keep(n int64) { r.acct.keep(n) }

// setCode sets an error code field of the response and records the first
// non-zero one as the request's outcome. Handlers set every error code
// through it (TestHandlersSetCodesThroughSetCode), so the observer learns
// the outcome where it is decided, not by searching the response.
func (r *request) setCode(field *int16, code int16) {
	*field = code
	if r.code == 0 {
		r.code = code
	}
}

// connLogger is the logger of one connection and of every request on
// it: base with the connection's remote address. Its records carry
// "remote" already, so a log call through it never adds the key again
// (the text handler would print it twice).
func connLogger(base *slog.Logger, remote string) *slog.Logger {
	return base.With("remote", remote)
}

// serveConn reads, handles and answers requests on conn one at a time
// until the peer closes, breaks the protocol, idles past IdleTimeout,
// stalls inside a frame or a write past FrameReadTimeout, or the server
// shuts down. Requests that are already buffered are handled before their
// answers are written, so pipelined requests share writes but still get
// their answers strictly in order. A panic is recovered, logged with its
// stack, and closes only this connection. With Config.TLS, the TLS
// handshake comes first.
func (s *Server) serveConn(ctx context.Context, conn net.Conn, remote string) {
	logger := connLogger(s.logger, remote)
	defer func() {
		if v := recover(); v != nil {
			logger.Error("handler panic, closing connection", "err", v, "stack", string(debug.Stack()))
		}
	}()
	from := &peer{remote: remote, host: "/"}
	if addr, ok := conn.RemoteAddr().(*net.TCPAddr); ok {
		from.host += addr.IP.String()
	}
	if s.tls != nil {
		tc, err := s.handshake(conn)
		if err != nil {
			s.logHandshakeError(logger, err)
			return
		}
		conn = tc
	}
	defer s.authDeadline(conn, from, logger)()
	d := &deadlines{conn: conn, exactWrites: s.tls != nil}
	br := bufio.NewReaderSize(conn, connReadBufferBytes)
	acct := &account{mem: s.mem, wait: s.frameTimeout}
	defer acct.settle()
	r := &request{ctx: ctx, logger: logger, peer: from, acct: acct}
	var out []byte // answers not yet written
	for first := true; ; first = false {
		frame, pooled, err := s.readFrame(ctx, d, br, acct, s.frameLimit(from))
		big, err := s.skimmable(err, from) // a frame over MaxFrameBytes to skim (oversize.go)
		if err != nil {
			switch {
			case first && s.answerHTTP(d, br, logger, err): // http.go
			case s.sasl != nil && !from.sasl.done.Load() && errors.Is(err, protocol.ErrFrameTooLarge):
				// Over what is read before authentication: a failed
				// authentication, as Kafka's SaslServerAuthenticator says.
				s.authFailed(ctx, logger, from, fmt.Errorf("%w: %w", errUnauthenticated, err))
			default:
				s.logReadError(logger, err)
			}
			return
		}
		if from.sasl.raw { // after a SaslHandshake v0: a bare SASL token, not a request (sasl_raw.go)
			if !s.serveRawToken(ctx, d, logger, from, frame, out) {
				return
			}
			if pooled {
				s.mem.bufs.put(frame)
			}
			acct.settle()
			out = out[:0]
			continue
		}
		start := s.started()
		var resp kmsg.Response
		var corr int32
		if big != nil {
			resp, corr, err = s.serveOversized(r, br, big)
		} else {
			resp, corr, err = s.handleFrame(r, frame)
		}
		if errors.Is(err, errSkimmed) { // logged already
			_ = s.write(d, out)
			return
		}
		if err == nil {
			err = r.failed
		}
		if errors.Is(err, errFaultDrop) {
			_ = s.write(d, out)                // the answers before it are owed
			s.stallAfterDrop(ctx, d, br, acct) // fault_apply.go
			return
		}
		if err != nil {
			_ = s.write(d, out)                     // the answers before it are owed
			if errors.Is(err, errUnauthenticated) { // a request the SASL stage does not allow
				s.authFailed(ctx, logger, from, err)
			} else {
				logger.Warn("closing connection", "err", err)
			}
			return
		}
		// Before the write, so a client that has read the response can
		// count on the observer having seen it.
		s.observer.RequestDone(int16(r.key), r.version, r.code, s.took(start))
		owed := len(out) // the answers before this one
		if resp != nil { // nil: a produce with acks 0, which is not answered
			// A large answer was reserved: room for it at once, not by
			// append's doubling copies.
			out = s.grow(out, int(r.answerBytes))
			out = protocol.AppendResponse(out, corr, resp)
		}
		// The answer is encoded: nothing refers to the frame or to the
		// buffers records were read into any more, unless a control kept
		// the request.
		if pooled && !r.retain {
			s.mem.bufs.put(frame)
		}
		acct.encoded(int64(cap(out)))
		if r.closeAfter != nil { // a failed authentication: held back (sasl_failure.go)
			_ = s.write(d, out[:owed])
			s.authFailed(ctx, logger, from, r.closeAfter)
			_ = s.write(d, out[owed:])
			return
		}
		if len(out) < coalesceBytes && s.frameBuffered(br) {
			continue
		}
		err = s.write(d, out)
		acct.settle()
		if err != nil {
			s.logWriteError(logger, err)
			return
		}
		if cap(out) > keepOutputBytes {
			s.mem.bufs.put(out)
			out = nil
		} else {
			out = out[:0]
		}
	}
}

// grow returns out with room for n more bytes. A large answer takes a
// buffer of the pool, which serveConn gives back after the write.
func (s *Server) grow(out []byte, n int) []byte {
	if n <= cap(out)-len(out) || len(out)+n <= keepOutputBytes {
		return slices.Grow(out, n)
	}
	grown := append(s.mem.bufs.get(len(out)+n), out...)
	if cap(out) > keepOutputBytes {
		s.mem.bufs.put(out)
	}
	return grown
}

// write sends out, if anything, within FrameReadTimeout (deadline.go).
func (s *Server) write(d *deadlines, out []byte) error {
	if len(out) == 0 {
		return nil
	}
	now := time.Now()
	end := now.Add(s.frameTimeout)
	d.writeBy(now, end, s.frameTimeout)
	for {
		n, err := d.conn.Write(out)
		if err == nil || !d.writeAgain(err, end) {
			return err
		}
		out = out[n:]
	}
}

// handshake runs the TLS server handshake on conn within FrameReadTimeout.
// Shutdown closes conn, which ends a handshake in progress.
func (s *Server) handshake(conn net.Conn) (*tls.Conn, error) {
	tc := tls.Server(conn, s.tls)
	_ = conn.SetDeadline(time.Now().Add(s.frameTimeout))
	if err := tc.Handshake(); err != nil {
		return nil, err
	}
	_ = conn.SetDeadline(time.Time{})
	return tc, nil
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// handleFrame decodes one request into r and dispatches it. r is the
// connection's: its context, logger, peer and account stay, the rest is
// the frame's own. An error means the connection must close (Kafka's
// SocketServer rules): an unparsable header or body, an unknown API key,
// or an unsupported version of any API but a version probe (the
// versionProbe trait: ApiVersions), which instead gets KIP-511's v0 error
// answer.
func (s *Server) handleFrame(r *request, frame []byte) (resp kmsg.Response, corr int32, err error) {
	ctx, logger, from := r.ctx, r.logger, r.peer
	*r = request{ctx: ctx, logger: logger, peer: from, acct: r.acct}
	h, body, err := protocol.ParseHeaderReusing(frame, from.lastID)
	if err != nil {
		return nil, 0, err
	}
	if h.ClientID != nil {
		from.lastID = h.ClientID
	}
	if err := s.admit(from, kmsg.Key(h.APIKey)); err != nil {
		return nil, 0, err
	}
	r.key, r.version = kmsg.Key(h.APIKey), h.APIVersion
	if err := s.reserveRequest(r, h.APIKey, h.APIVersion, frame, body); err != nil {
		return nil, 0, err
	}
	req, err := protocol.DecodeRequest(h, body)
	if err != nil {
		if s.traitsOf(h.APIKey)&versionProbe != 0 && errors.Is(err, protocol.ErrUnsupportedVersion) {
			logger.Debug("unsupported version of a version probe", "api", kmsg.NameForKey(h.APIKey), "version", h.APIVersion, "corr", h.CorrelationID)
			r.code = kerr.UnsupportedVersion.Code
			return protocol.UnsupportedAPIVersionsResponse(), h.CorrelationID, nil
		}
		return nil, 0, err
	}
	if h.ClientID != nil {
		r.clientID = *h.ClientID
	}
	if r.clientID != from.clientID {
		from.clientID = r.clientID
		s.identified(from)
	}
	if logger.Enabled(ctx, slog.LevelDebug) { // spare the hot path the boxing of the attributes
		logger.Debug("request", "api", kmsg.NameForKey(h.APIKey), "version", h.APIVersion, "corr", h.CorrelationID)
	}
	resp = s.dispatch(r, req) // dispatch.go: where faults are applied
	return resp, h.CorrelationID, nil
}

// frameBuffered reports whether br already holds the whole next frame and
// that frame can be answered without waiting, so that its answer can share
// a write with this one. A partial frame is not enough: the client may wait
// for our answer before it sends the rest. Nor is a request of an API that
// may wait (a Fetch, up to its MaxWait) or reserves a large answer (which
// waits for the budget only while the connection holds no work), nor one
// that reserves what it holds beyond its frame: answers already made must
// not wait with it.
func (s *Server) frameBuffered(br *bufio.Reader) bool {
	if br.Buffered() < 6 {
		return false // and Peek would block for the rest of the size and key
	}
	head, err := br.Peek(6)
	if err != nil {
		return false
	}
	size := int32(binary.BigEndian.Uint32(head))
	key := int16(binary.BigEndian.Uint16(head[4:]))
	if size < 0 || br.Buffered()-4 < int(size) || !s.traitsOf(key).coalesces() {
		return false
	}
	// A request that reserves what it holds (amplification.go) may wait
	// for it, as a large answer's may: not with answers already made.
	frame, _ := br.Peek(4 + int(size)) // buffered: cannot block
	frame = frame[4:]
	body, ok := requestBody(frame)
	if !ok {
		return true // closes the connection once parsed
	}
	return s.requestBound(key, int16(binary.BigEndian.Uint16(frame[2:])), frame, body) == 0
}

func (s *Server) logReadError(logger *slog.Logger, err error) {
	switch {
	case errors.Is(err, io.EOF), errors.Is(err, net.ErrClosed):
		logger.Debug("connection closed")
	case errors.Is(err, errIdle):
		// Kafka's Selector closes idle connections at Debug too: clients
		// reconnect when they need to.
		logger.Debug("closing idle connection", "err", err)
	case errors.Is(err, protocol.ErrFrameTooLarge), errors.Is(err, errFrameTimeout), errors.Is(err, errBudget):
		logger.Warn("closing connection", "err", err)
	default:
		logger.Debug("read failed", "err", err)
	}
}

func (s *Server) logWriteError(logger *slog.Logger, err error) {
	if isTimeout(err) {
		logger.Warn("closing connection", "err", fmt.Errorf("answer not read within %v: %w", s.frameTimeout, err))
		return
	}
	logger.Debug("write failed", "err", err)
}

// logHandshakeError logs a failed TLS handshake at Warn (a plaintext
// client, a bad or missing client certificate, a stall), except for a peer
// that connected and left without a byte, such as a port probe.
func (s *Server) logHandshakeError(logger *slog.Logger, err error) {
	if errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) {
		logger.Debug("connection closed before the tls handshake", "err", err)
		return
	}
	logger.Warn("tls handshake failed, closing connection", "err", err)
}
