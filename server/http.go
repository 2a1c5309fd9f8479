package server

// An HTTP request on the Kafka port: a browser or curl pointed at 9092
// instead of the admin API. Its first four bytes ("GET ") read as a
// frame's size prefix say 1195725856 bytes, which Kafka refuses as too
// large and closes (NetworkReceive.readFrom: "Invalid receive"), leaving
// its user to guess. We recognise the size prefixes that are HTTP methods
// on a connection's first request, log that the request looks like HTTP
// and where the admin API is, and answer a minimal HTTP/1.1 400 whose
// one-line body says the same before closing (docs/behavior-matrix.md,
// `wire-http-on-kafka-port`), so that `curl 127.0.0.1:9092` prints a useful
// line. Logged at Warn, at most one line a second with the number held
// back.

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/minibroker/minibroker/protocol"
)

// httpMethods are the methods whose first four bytes, with the space that
// follows a short one, can open an HTTP/1.x request ("PRI " opens
// HTTP/2's preface).
var httpMethods = [...]string{"GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS", "PATCH", "CONNECT", "TRACE", "PRI"}

// httpMethod returns the HTTP method whose first four bytes, read as a
// big-endian size prefix, are size.
func httpMethod(size int32) (string, bool) {
	var head [4]byte
	binary.BigEndian.PutUint32(head[:], uint32(size))
	for _, m := range httpMethods {
		if string(head[:]) == (m + " ")[:4] {
			return m, true
		}
	}
	return "", false
}

// httpDrainBytes and httpDrainTime bound what is read of an HTTP request
// after the answer, so that closing with its bytes unread does not reset
// the connection before the client has read the answer.
const (
	httpDrainBytes = 64 << 10
	httpDrainTime  = time.Second
)

// kafkaPortMessage is the one line an HTTP client is answered with, and
// the log says: this port speaks Kafka, and where the admin API is.
func (s *Server) kafkaPortMessage() string {
	if s.adminAddr == "" {
		return "this port speaks the Kafka protocol, not HTTP; the admin API and live page are off (minibroker serve --admin ADDR turns them on)"
	}
	return "this port speaks the Kafka protocol, not HTTP; the admin API and live page are at " + s.adminURL()
}

// adminURL is the admin API's address as a URL.
func (s *Server) adminURL() string { return "http://" + s.adminAddr + "/" }

// answerHTTP answers and logs the first frame of a connection when err
// refused it for a size prefix that is an HTTP method, and reports
// whether it did; the caller then closes the connection.
func (s *Server) answerHTTP(d *deadlines, br *bufio.Reader, logger *slog.Logger, err error) bool {
	var fe *protocol.FrameSizeError
	if !errors.As(err, &fe) {
		return false
	}
	method, ok := httpMethod(fe.Size)
	if !ok {
		return false
	}
	if n, ok := s.httpLog.allow(time.Now()); ok {
		admin := "off"
		if s.adminAddr != "" {
			admin = s.adminURL()
		}
		logger.Warn("closing connection: the request looks like HTTP, and this port speaks the Kafka protocol",
			"method", method, "admin", admin, "err", err, "suppressed", n)
	}
	body := s.kafkaPortMessage() + "\n"
	answer := fmt.Sprintf("HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", len(body), body)
	if err := s.write(d, []byte(answer)); err != nil {
		return true
	}
	// The rest of the request is read, up to a bound, after a half
	// close: closing with it unread would send a reset, which may reach
	// the client before it has read the answer.
	if cw, ok := d.conn.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	}
	d.setRead(time.Now().Add(min(httpDrainTime, s.frameTimeout)))
	_, _ = io.Copy(io.Discard, io.LimitReader(br, httpDrainBytes))
	return true
}
