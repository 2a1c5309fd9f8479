package server

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"log/slog"
	"net"
	"runtime/debug"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/protocol"
)

// connBufferBytes sizes each connection's read and write buffers.
const connBufferBytes = 16 << 10

// request is what a handler knows about the request beyond its body. It is
// owned by the connection goroutine.
type request struct {
	ctx      context.Context
	logger   *slog.Logger
	clientID string
	host     string // the client's address as Kafka reports it: "/127.0.0.1"
	version  int16
}

// serveConn reads, handles and answers requests on conn one at a time
// until the peer closes, breaks the protocol, or the server shuts down.
// Requests that are already buffered are handled before the responses are
// flushed, so pipelined requests share writes but still get their answers
// strictly in order. A panic is recovered, logged with its stack, and
// closes only this connection.
func (s *Server) serveConn(ctx context.Context, conn net.Conn) {
	logger := s.logger.With("remote", conn.RemoteAddr().String())
	defer func() {
		if v := recover(); v != nil {
			logger.Error("handler panic, closing connection", "err", v, "stack", string(debug.Stack()))
		}
	}()
	host := "/"
	if addr, ok := conn.RemoteAddr().(*net.TCPAddr); ok {
		host += addr.IP.String()
	}
	br := bufio.NewReaderSize(conn, connBufferBytes)
	bw := bufio.NewWriterSize(conn, connBufferBytes)
	var out []byte
	for {
		frame, err := protocol.ReadFrame(br, s.maxFrame, nil)
		if err != nil {
			s.logReadError(logger, err)
			return
		}
		start := time.Now()
		resp, corr, err := s.handleFrame(ctx, logger, host, frame)
		if err != nil {
			logger.Warn("closing connection", "err", err)
			bw.Flush()
			return
		}
		// Before the write, so a client that has read the response can
		// count on the observer having seen it.
		s.observer.RequestDone(resp.Key(), resp.GetVersion(), ResponseErrorCode(resp), time.Since(start))
		out = protocol.AppendResponse(out[:0], corr, resp)
		if _, err := bw.Write(out); err != nil {
			logger.Debug("write failed", "err", err)
			return
		}
		if !frameBuffered(br) {
			if err := bw.Flush(); err != nil {
				logger.Debug("write failed", "err", err)
				return
			}
		}
	}
}

// handleFrame decodes one request and dispatches it. An error means the
// connection must close (Kafka's SocketServer rules): an unparsable header
// or body, an unknown API key, or an unsupported version of any API but
// ApiVersions, which instead gets KIP-511's v0 error answer.
func (s *Server) handleFrame(ctx context.Context, logger *slog.Logger, host string, frame []byte) (kmsg.Response, int32, error) {
	h, body, err := protocol.ParseHeader(frame)
	if err != nil {
		return nil, 0, err
	}
	req, err := protocol.DecodeRequest(h, body)
	if err != nil {
		if h.APIKey == int16(kmsg.ApiVersions) && errors.Is(err, protocol.ErrUnsupportedVersion) {
			logger.Debug("unsupported ApiVersions version", "version", h.APIVersion, "corr", h.CorrelationID)
			return protocol.UnsupportedAPIVersionsResponse(), h.CorrelationID, nil
		}
		return nil, 0, err
	}
	r := &request{ctx: ctx, logger: logger, host: host, version: h.APIVersion}
	if h.ClientID != nil {
		r.clientID = *h.ClientID
	}
	logger.Debug("request", "api", kmsg.NameForKey(h.APIKey), "version", h.APIVersion, "corr", h.CorrelationID)
	return s.handlers[kmsg.Key(h.APIKey)](s, r, req), h.CorrelationID, nil
}

// frameBuffered reports whether br already holds the whole next frame and
// that frame can be answered without waiting, so that its answer can share
// a write with this one. A partial frame is not enough: the client may wait
// for our answer before it sends the rest. Nor is a Fetch, which waits up
// to its MaxWait: answers already made must not wait with it.
func frameBuffered(br *bufio.Reader) bool {
	if br.Buffered() < 6 {
		return false // and Peek would block for the rest of the size and key
	}
	head, err := br.Peek(6)
	if err != nil {
		return false
	}
	size := int32(binary.BigEndian.Uint32(head))
	key := int16(binary.BigEndian.Uint16(head[4:]))
	return size >= 0 && br.Buffered()-4 >= int(size) && key != int16(kmsg.Fetch)
}

func (s *Server) logReadError(logger *slog.Logger, err error) {
	switch {
	case errors.Is(err, io.EOF), errors.Is(err, net.ErrClosed):
		logger.Debug("connection closed")
	case errors.Is(err, protocol.ErrFrameTooLarge):
		logger.Warn("closing connection", "err", err)
	default:
		logger.Debug("read failed", "err", err)
	}
}
