package server

import (
	"net"
	"time"
)

// A connection's read and write deadlines. Setting one resets a runtime
// timer, and a loop that set three for every request (the idle wait, the
// frame, the answer) spent on them, with their clock reads, close to a
// tenth of a heartbeat's CPU (docs/performance.md). These rules set a
// deadline about once per half timeout instead, and keep every timeout
// exact:
//
//   - A wait that must give up at end (its timeout after it starts) keeps
//     a deadline already set if that one falls between half the timeout
//     and end. If it passes first, the wait's timeout is not reported:
//     the deadline moves to end and the wait goes on. A deadline later
//     than end is always moved, since it would close late.
//   - A frame whose bytes are all in the read buffer is read without a
//     deadline: reading it cannot block. A frame still arriving sets its
//     deadline exactly, since a timeout inside protocol.ReadFrame loses
//     what it read.
//   - A TLS connection's writes set their deadline exactly: a write that
//     timed out leaves crypto/tls's state broken.

// deadlines is what serveConn knows of conn's deadlines. Owned by the
// connection goroutine; nothing else sets conn's deadlines while it runs.
type deadlines struct {
	conn net.Conn
	// exactWrites: every write sets its deadline (a TLS connection).
	exactWrites bool
	// read and write are the deadlines last set; zero: none.
	read, write time.Time
}

// readBy prepares a wait that starts at now and must give up at end,
// timeout later, keeping the read deadline set if it may.
func (d *deadlines) readBy(now, end time.Time, timeout time.Duration) {
	if d.read.After(end) || d.read.Sub(now) < timeout/2 {
		d.setRead(end)
	}
}

// setRead sets the read deadline to t exactly.
func (d *deadlines) setRead(t time.Time) {
	if !t.Equal(d.read) {
		_ = d.conn.SetReadDeadline(t)
		d.read = t
	}
}

// readAgain reports whether a read that failed with err should go on: it
// timed out at an earlier deadline than end, which it moves to end.
func (d *deadlines) readAgain(err error, end time.Time) bool {
	if !isTimeout(err) || !time.Now().Before(end) {
		return false
	}
	d.setRead(end)
	return true
}

// writeBy is readBy for a write, exact on a TLS connection.
func (d *deadlines) writeBy(now, end time.Time, timeout time.Duration) {
	if d.exactWrites || d.write.After(end) || d.write.Sub(now) < timeout/2 {
		d.setWrite(end)
	}
}

func (d *deadlines) setWrite(t time.Time) {
	if !t.Equal(d.write) {
		_ = d.conn.SetWriteDeadline(t)
		d.write = t
	}
}

// writeAgain is readAgain for a write; never on a TLS connection.
func (d *deadlines) writeAgain(err error, end time.Time) bool {
	if d.exactWrites || !isTimeout(err) || !time.Now().Before(end) {
		return false
	}
	d.setWrite(end)
	return true
}
