package server

import (
	"errors"
	"net"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/testkit/wiretest"
)

// deadlineConn records the deadlines set on it.
type deadlineConn struct {
	net.Conn
	reads, writes []time.Time
}

func (c *deadlineConn) SetReadDeadline(t time.Time) error {
	c.reads = append(c.reads, t)
	return nil
}

func (c *deadlineConn) SetWriteDeadline(t time.Time) error {
	c.writes = append(c.writes, t)
	return nil
}

// TestDeadlinesKeptWhileHalfTheTimeoutIsLeft: a wait keeps the deadline
// set while it is at least half the timeout away and no later than the
// wait's end, and sets its end otherwise; a timeout before the end moves
// the deadline to the end and goes on, one at or after it does not, nor
// does any other error. A TLS connection sets every write's deadline.
func TestDeadlinesKeptWhileHalfTheTimeoutIsLeft(t *testing.T) {
	t.Parallel()
	const timeout = 10 * time.Second
	t0 := time.Now()
	at := func(d time.Duration) time.Time { return t0.Add(d) }

	c := &deadlineConn{}
	d := &deadlines{conn: c}
	d.readBy(at(0), at(timeout), timeout)
	assert.Equal(t, []time.Time{at(timeout)}, c.reads, "none set yet: set")
	d.readBy(at(timeout/2), at(timeout/2+timeout), timeout)
	assert.Len(t, c.reads, 1, "half the timeout left: kept")
	d.readBy(at(timeout/2+1), at(timeout/2+1+timeout), timeout)
	assert.Equal(t, at(timeout/2+1+timeout), c.reads[1], "less than half left: set")
	d.readBy(at(timeout/2+1), at(timeout/2+1+timeout/10), timeout/10)
	assert.Equal(t, at(timeout/2+1+timeout/10), c.reads[2], "later than the end: set")
	d.setRead(at(timeout/2 + 1 + timeout/10))
	assert.Len(t, c.reads, 3, "the same deadline is not set again")

	timedOut := os.ErrDeadlineExceeded
	end := time.Now().Add(time.Hour)
	assert.True(t, d.readAgain(timedOut, end), "timed out before the end: go on")
	assert.Equal(t, end, c.reads[3], "at the end")
	assert.False(t, d.readAgain(timedOut, time.Now().Add(-time.Millisecond)), "timed out at the end")
	assert.False(t, d.readAgain(errors.New("reset"), end), "not a timeout")
	assert.Len(t, c.reads, 4)

	d.writeBy(at(0), at(timeout), timeout)
	d.writeBy(at(1), at(1+timeout), timeout)
	assert.Equal(t, []time.Time{at(timeout)}, c.writes, "writes keep theirs the same way")
	assert.True(t, d.writeAgain(timedOut, end))
	assert.Equal(t, end, c.writes[1])

	tc := &deadlineConn{}
	exact := &deadlines{conn: tc, exactWrites: true}
	exact.writeBy(at(0), at(timeout), timeout)
	exact.writeBy(at(1), at(1+timeout), timeout)
	assert.Equal(t, []time.Time{at(timeout), at(1 + timeout)}, tc.writes, "TLS: every write sets its own")
	assert.False(t, exact.writeAgain(timedOut, end), "TLS: a timed-out write does not go on")
}

// TestIdleDeadlineKeptFromAnEarlierRequest: a connection that keeps
// sending requests for a while keeps the idle deadline its first one set;
// once it falls quiet it is still closed no sooner than IdleTimeout after
// its last request, not when that first deadline passes.
func TestIdleDeadlineKeptFromAnEarlierRequest(t *testing.T) {
	t.Parallel()
	const idle = 600 * time.Millisecond
	e := newEnvWith(t, envOptions{config: func(cfg *Config) { cfg.IdleTimeout = idle }})
	c := wiretest.Dial(t, e.serve(), "c")
	start := time.Now()
	var quietSince time.Time
	for time.Since(start) < idle/3 { // well within the first deadline's kept half
		quietSince = time.Now()
		wiretest.Do[*kmsg.ApiVersionsResponse](t, c, apiVersionsRequest(3))
	}
	wiretest.RequireClosed(t, c)
	assert.GreaterOrEqual(t, time.Since(quietSince), idle, "not closed before the idle timeout")
	eventually(t, testTimeout, func() bool { return len(e.logs.Find("closing idle connection")) == 1 }, "the close is logged")
}

// timeoutConn is a deadlineConn whose writes time out after taking
// part of what they are given, while timeouts lasts, then take it all.
type timeoutConn struct {
	deadlineConn
	timeouts int
	got      []byte
}

func (c *timeoutConn) Write(b []byte) (int, error) {
	if c.timeouts > 0 {
		c.timeouts--
		c.got = append(c.got, b[:1]...)
		return 1, os.ErrDeadlineExceeded
	}
	c.got = append(c.got, b...)
	return len(b), nil
}

// TestWriteGoesOnPastAnEarlierDeadline: a write that times out at a
// deadline an earlier write set, before its own FrameReadTimeout is up,
// moves the deadline and writes the rest; one on a TLS connection gives
// up, as crypto/tls cannot go on after a timeout.
func TestWriteGoesOnPastAnEarlierDeadline(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := &timeoutConn{timeouts: 2}
	d := &deadlines{conn: c}
	require.NoError(t, e.srv.write(d, []byte("answer")))
	assert.Equal(t, "answer", string(c.got), "every byte once, in order")
	require.Len(t, c.writes, 1, "set once: the retries keep the write's end")
	assert.WithinDuration(t, time.Now().Add(e.srv.frameTimeout), c.writes[0], time.Minute/2)

	tc := &timeoutConn{timeouts: 1}
	require.ErrorIs(t, e.srv.write(&deadlines{conn: tc, exactWrites: true}, []byte("answer")), os.ErrDeadlineExceeded)
	assert.Equal(t, "a", string(tc.got))
}
