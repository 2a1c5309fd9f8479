package wireclient

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"time"

	"github.com/minibroker/minibroker/protocol"
	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// clientMaxFrameBytes caps response frames read by a Client. It mirrors kgo's
// BrokerMaxReadBytes default (100 MiB).
const clientMaxFrameBytes = 100 << 20

// ErrCorrelationMismatch is returned by a Client when a response carries a
// correlation id other than the one it waits for. Like kgo, we then treat the
// connection as broken.
var ErrCorrelationMismatch = errors.New("wireclient: correlation id mismatch")

// Client is a raw kmsg client over one TCP connection, for integration tests
// and labs: no version negotiation, no retries, no routing. Requests go out
// at the version set on them.
//
// A Client is not safe for concurrent use: one goroutine owns it at a time
// (Close may be called from any goroutine). After any error other than a
// response-level error code, the connection state is unknown: Close it.
type Client struct {
	conn net.Conn
	br   *bufio.Reader
	fmtr *kmsg.RequestFormatter
	corr int32  // next correlation id
	wbuf []byte // reused buffer for all requests of one write
	one  []byte // reused buffer for formatting one request

	closeOnce sync.Once
	closeErr  error
}

// Dial connects to addr and returns a Client that sends clientID in every
// request header. ctx bounds the dial only.
func Dial(ctx context.Context, addr, clientID string) (*Client, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("wireclient: dial %s: %w", addr, err)
	}
	return NewClient(conn, clientID), nil
}

// NewClient returns a Client over a connection the caller opened, such as
// a *tls.Conn, that sends clientID in every request header. The Client
// owns conn from then on.
func NewClient(conn net.Conn, clientID string) *Client {
	return &Client{
		conn: conn,
		br:   bufio.NewReader(conn),
		fmtr: kmsg.NewRequestFormatter(kmsg.FormatterClientID(clientID)),
	}
}

// Request sends req with the next correlation id and returns its response.
func (c *Client) Request(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	resps, err := c.Pipeline(ctx, []kmsg.Request{req})
	if err != nil {
		return nil, err
	}
	return resps[0], nil
}

// Pipeline writes all reqs in one write, then reads their responses in order,
// checking each correlation id. The server must answer in request order, as
// Kafka does. Responses are read while the write is in flight, so a long
// pipeline cannot deadlock on full socket buffers.
//
// ctx's deadline becomes the connection deadline; cancelling ctx interrupts
// the I/O. On error no responses are returned.
func (c *Client) Pipeline(ctx context.Context, reqs []kmsg.Request) ([]kmsg.Response, error) {
	if len(reqs) == 0 {
		return nil, nil
	}
	stop, err := c.watch(ctx)
	if err != nil {
		return nil, err
	}
	defer stop()

	first := c.corr
	c.wbuf = c.wbuf[:0]
	for _, req := range reqs {
		// AppendRequest writes its size prefix at dst[0], so each request
		// is formatted alone and then appended.
		c.one = c.fmtr.AppendRequest(c.one[:0], req, c.corr)
		c.wbuf = append(c.wbuf, c.one...)
		c.corr++
	}
	written := make(chan error, 1)
	go func() { // owns the write side of conn until it sends on written
		_, err := c.conn.Write(c.wbuf)
		written <- err
	}()

	resps := make([]kmsg.Response, 0, len(reqs))
	var readErr error
	for i, req := range reqs {
		resp, err := c.readResponse(req, first+int32(i))
		if err != nil {
			readErr = err
			// Unblock the writer if the peer stopped reading.
			_ = c.conn.SetWriteDeadline(time.Unix(1, 0))
			break
		}
		resps = append(resps, resp)
	}
	if err := <-written; err != nil && readErr == nil {
		readErr = fmt.Errorf("wireclient: write: %w", err)
	}
	if readErr != nil {
		return nil, ctxErr(ctx, readErr)
	}
	return resps, nil
}

// readResponse reads one response frame for req, sent with corrID.
func (c *Client) readResponse(req kmsg.Request, corrID int32) (kmsg.Response, error) {
	frame, err := protocol.ReadFrame(c.br, clientMaxFrameBytes, nil)
	if err != nil {
		return nil, fmt.Errorf("wireclient: read %s response: %w", kmsg.NameForKey(req.Key()), err)
	}
	r := kbin.Reader{Src: frame}
	got := r.Int32()
	if !r.Ok() {
		return nil, fmt.Errorf("wireclient: %s response of %d bytes has no correlation id",
			kmsg.NameForKey(req.Key()), len(frame))
	}
	if got != corrID {
		return nil, fmt.Errorf("%w: got %d, want %d (%s)", ErrCorrelationMismatch,
			got, corrID, kmsg.NameForKey(req.Key()))
	}
	resp := req.ResponseKind()
	isAPIVersions := req.Key() == int16(kmsg.ApiVersions)
	if resp.IsFlexible() && !isAPIVersions { // response header v1
		kmsg.SkipTags(&r)
		if !r.Ok() {
			return nil, fmt.Errorf("wireclient: %s response header tags truncated", kmsg.NameForKey(req.Key()))
		}
	}
	body := r.Src
	// KIP-511: an ApiVersions version the broker does not know is answered
	// with a v0 body carrying UNSUPPORTED_VERSION (kgo checks the same bytes).
	if isAPIVersions && len(body) >= 2 && int16(binary.BigEndian.Uint16(body)) == kerr.UnsupportedVersion.Code {
		resp.SetVersion(0)
	}
	if err := resp.ReadFrom(body); err != nil {
		return nil, fmt.Errorf("wireclient: decode %s v%d response: %w",
			kmsg.NameForKey(req.Key()), resp.GetVersion(), err)
	}
	return resp, nil
}

// Send writes raw bytes as they are, for hostile-input tests. It does not
// add a size prefix or use a correlation id.
func (c *Client) Send(raw []byte) error {
	if _, err := c.conn.Write(raw); err != nil {
		return fmt.Errorf("wireclient: send: %w", err)
	}
	return nil
}

// ReadFrame reads the next frame from the connection and returns it without
// its size prefix, in a new slice. A peer that closed the connection gives
// io.EOF. Use SetDeadline to bound the wait.
func (c *Client) ReadFrame() ([]byte, error) {
	return protocol.ReadFrame(c.br, clientMaxFrameBytes, nil)
}

// SetDeadline sets the read and write deadline for Send and ReadFrame, as
// net.Conn.SetDeadline does. Request and Pipeline replace it with ctx's.
func (c *Client) SetDeadline(t time.Time) error { return c.conn.SetDeadline(t) }

// LocalAddr returns the connection's local address, "127.0.0.1:54321":
// what the broker sees as the client's remote address.
func (c *Client) LocalAddr() string { return c.conn.LocalAddr().String() }

// Close closes the connection. It is idempotent: later calls return the
// first call's result.
func (c *Client) Close() error {
	c.closeOnce.Do(func() { c.closeErr = c.conn.Close() })
	return c.closeErr
}

// watch applies ctx to the connection: its deadline (or none) now, and an
// immediate deadline if ctx is cancelled. stop waits for a running cancel
// hook and clears the deadline, so nothing leaks into the next call.
func (c *Client) watch(ctx context.Context) (stop func(), err error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	deadline, _ := ctx.Deadline() // zero when none: no deadline
	if err := c.conn.SetDeadline(deadline); err != nil {
		return nil, fmt.Errorf("wireclient: set deadline: %w", err)
	}
	hooked := make(chan struct{})
	unhook := context.AfterFunc(ctx, func() {
		defer close(hooked)
		_ = c.conn.SetDeadline(time.Unix(1, 0))
	})
	return func() {
		if !unhook() {
			<-hooked
		}
		_ = c.conn.SetDeadline(time.Time{})
	}, nil
}

// ctxErr reports ctx's error when ctx ended the I/O, keeping the I/O error.
// A connection deadline taken from ctx can fire just before ctx itself is
// done, so a timeout past ctx's deadline counts as context.DeadlineExceeded.
func ctxErr(ctx context.Context, err error) error {
	if cerr := ctx.Err(); cerr != nil {
		return fmt.Errorf("%w: %w", cerr, err)
	}
	if dl, ok := ctx.Deadline(); ok && errors.Is(err, os.ErrDeadlineExceeded) && !time.Now().Before(dl) {
		return fmt.Errorf("%w: %w", context.DeadlineExceeded, err)
	}
	return err
}
