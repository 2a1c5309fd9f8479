package loadgen

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/protocol"
)

// maxResponseBytes caps a response frame, as kgo's BrokerMaxReadBytes.
const maxResponseBytes = 100 << 20

// Conn is one client connection that pipelines raw kmsg requests: Queue
// formats requests into one write buffer, Flush sends them in one write,
// and Read returns their responses in order, checking each correlation id.
// It is owned by one goroutine.
type Conn struct {
	nc   net.Conn
	br   *bufio.Reader
	fmtr *kmsg.RequestFormatter
	wbuf []byte
	one  []byte
	rbuf []byte
	corr int32
	next int32 // correlation id of the next response
}

// Dial connects to addr; ctx bounds the dial only.
func Dial(ctx context.Context, addr, clientID string) (*Conn, error) {
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("loadgen: dial %s: %w", addr, err)
	}
	if tc, ok := nc.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
	}
	return &Conn{
		nc:   nc,
		br:   bufio.NewReaderSize(nc, 64<<10),
		fmtr: kmsg.NewRequestFormatter(kmsg.FormatterClientID(clientID)),
	}, nil
}

// Queue formats req, with the next correlation id, behind the requests
// already queued.
func (c *Conn) Queue(req kmsg.Request) {
	c.one = c.fmtr.AppendRequest(c.one[:0], req, c.corr)
	c.wbuf = append(c.wbuf, c.one...)
	c.corr++
}

// Flush writes every queued request in one write.
func (c *Conn) Flush() error {
	if len(c.wbuf) == 0 {
		return nil
	}
	_, err := c.nc.Write(c.wbuf)
	c.wbuf = c.wbuf[:0]
	if err != nil {
		return fmt.Errorf("loadgen: write: %w", err)
	}
	return nil
}

// Read reads the next response into resp, which must be the response kind
// of the request sent in that position (req.ResponseKind()).
func (c *Conn) Read(resp kmsg.Response) error {
	frame, err := protocol.ReadFrame(c.br, maxResponseBytes, c.rbuf)
	if err != nil {
		return fmt.Errorf("loadgen: read %s response: %w", kmsg.NameForKey(resp.Key()), err)
	}
	if cap(frame) > cap(c.rbuf) && cap(frame) <= 1<<20 {
		c.rbuf = frame[:0]
	}
	if len(frame) < 4 {
		return fmt.Errorf("loadgen: %s response of %d bytes", kmsg.NameForKey(resp.Key()), len(frame))
	}
	if got := int32(binary.BigEndian.Uint32(frame)); got != c.next {
		return fmt.Errorf("loadgen: correlation id %d, want %d (%s)", got, c.next, kmsg.NameForKey(resp.Key()))
	}
	c.next++
	body := frame[4:]
	if resp.IsFlexible() && resp.Key() != int16(kmsg.ApiVersions) {
		if len(body) == 0 || body[0] != 0 {
			return fmt.Errorf("loadgen: %s response header has tagged fields we do not read", kmsg.NameForKey(resp.Key()))
		}
		body = body[1:]
	}
	if err := resp.ReadFrom(body); err != nil {
		return fmt.Errorf("loadgen: decode %s v%d response: %w", kmsg.NameForKey(resp.Key()), resp.GetVersion(), err)
	}
	return nil
}

// Do sends req alone and returns its response.
func (c *Conn) Do(req kmsg.Request) (kmsg.Response, error) {
	c.Queue(req)
	if err := c.Flush(); err != nil {
		return nil, err
	}
	resp := req.ResponseKind()
	return resp, c.Read(resp)
}

// SetDeadline bounds every later read and write.
func (c *Conn) SetDeadline(t time.Time) error { return c.nc.SetDeadline(t) }

// Close closes the connection.
func (c *Conn) Close() error { return c.nc.Close() }

var _ io.Closer = (*Conn)(nil)
