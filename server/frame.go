package server

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/minibroker/minibroker/protocol"
)

// Reading a request frame, and what a peer may hold while it sends one.
// Per connection:
//
//   - A frame announces at most MaxFrameBytes. One of at most
//     smallFrameBytes is read without reserving anything.
//   - A larger frame reserves its size of the budget's frames lane before
//     its body is read (waiting, unread, while the lane is spent). A
//     pooled frame (Produce) is read into a buffer of its whole size at
//     once, so that its bytes are never copied on the way in; any other
//     frame's buffer grows from firstFrameChunk (16 KiB) by doubling as
//     its bytes arrive.
//   - A frame that receives less than frameProgressBytes in a
//     frameStallWindow keeps of its reservation only what its buffer
//     holds (a pooled frame's buffer first shrinks to the smallest class
//     holding what arrived), so that a peer that announces 16 MiB and
//     stalls holds 16 KiB, not the budget; once its buffer must grow
//     again it reserves the rest, waiting as a new frame would.
//   - The whole frame must arrive within FrameReadTimeout of its first
//     byte; the connection is closed otherwise.

const (
	// firstFrameChunk is the buffer a large frame is read into first: a
	// frame that announces much and stalls holds no more of it.
	firstFrameChunk = 16 << 10
	// frameStallWindow and frameProgressBytes define a stalled frame: one
	// that received less than frameProgressBytes in the last window.
	frameStallWindow   = 500 * time.Millisecond
	frameProgressBytes = 64 << 10
)

// readFrame reads the next request frame: it waits up to IdleTimeout for
// the frame's first byte, unless that is buffered already, then up to
// FrameReadTimeout for the rest, and refuses a frame larger than limit
// (MaxFrameBytes, or less before SASL authentication: sasl.go). A frame
// larger than smallFrameBytes is
// reserved in acct (readLargeFrame). A frame of an API with the
// pooledFrame trait is read into a buffer of the pool (pooled), for the
// caller to give back once the answer is encoded.
func (s *Server) readFrame(ctx context.Context, d *deadlines, br *bufio.Reader, acct *account, limit int32) (frame []byte, pooled bool, err error) {
	if br.Buffered() == 0 {
		now := time.Now()
		end := now.Add(s.idleTimeout)
		d.readBy(now, end, s.idleTimeout) // deadline.go
		for {
			_, err := br.Peek(1)
			if err == nil {
				break
			}
			if d.readAgain(err, end) {
				continue
			}
			if isTimeout(err) {
				return nil, false, fmt.Errorf("%w: no request for %v", errIdle, s.idleTimeout)
			}
			return nil, false, err
		}
	}
	if whole(br) {
		// Nothing to wait for: no deadline.
		frame, err = protocol.ReadFrame(br, limit, nil)
		return frame, false, err
	}
	deadline := time.Now().Add(s.frameTimeout)
	d.setRead(deadline)
	if head, err := br.Peek(4); err == nil {
		if size := int32(binary.BigEndian.Uint32(head)); size > smallFrameBytes && size <= limit {
			_, _ = br.Discard(4)
			frame, pooled, err = s.readLargeFrame(ctx, d, br, acct, int(size), deadline)
			if err != nil && isTimeout(err) {
				err = fmt.Errorf("%w: not whole within %v", errFrameTimeout, s.frameTimeout)
			}
			return frame, pooled, err
		}
	}
	frame, err = protocol.ReadFrame(br, limit, nil)
	if err != nil && isTimeout(err) {
		return nil, false, fmt.Errorf("%w: not whole within %v", errFrameTimeout, s.frameTimeout)
	}
	return frame, false, err
}

// whole reports whether br holds the whole next frame, one of at most
// smallFrameBytes (a larger one is never whole in the read buffer).
func whole(br *bufio.Reader) bool {
	if br.Buffered() < 4 {
		return false
	}
	head, _ := br.Peek(4) // buffered: cannot block
	size := int32(binary.BigEndian.Uint32(head))
	return size >= 0 && size <= smallFrameBytes && br.Buffered()-4 >= int(size)
}

// readLargeFrame reads the size bytes of a large frame's body, holding in
// acct's frames lane what the rules above allow.
func (s *Server) readLargeFrame(ctx context.Context, d *deadlines, br *bufio.Reader, acct *account, size int, deadline time.Time) ([]byte, bool, error) {
	wait, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	// The API key comes first: it says whether the frame is pooled.
	head, err := br.Peek(2)
	if err != nil {
		return nil, false, noEOF(err)
	}
	pooled := s.traitsOf(int16(binary.BigEndian.Uint16(head)))&pooledFrame != 0
	need := int64(size)
	alloc := func(n int) []byte { return make([]byte, 0, n) }
	if c, ok := pooledCap(size); !ok || int64(c) > s.mem.frames.max {
		pooled = false // a class the lane could not hold: read it exactly
	} else if pooled {
		// A pooled frame grows through buffers of the pool and ends in
		// one, given back once its answer is encoded; another frame's
		// buffers are the collector's, as a handler may keep references
		// into its request.
		need, alloc = int64(c), s.mem.bufs.get
	}
	held, err := s.mem.frames.acquire(wait, need)
	if err != nil {
		return nil, false, fmt.Errorf("%w: %d bytes for a request not free within %v", errBudget, size, s.frameTimeout)
	}
	acct.frames += held
	// A pooled frame is read into its final buffer at once, which its
	// reservation covers already: no byte is copied while it arrives. A
	// stall shrinks it below. Another frame grows by doubling.
	var buf []byte
	if pooled {
		buf = alloc(size)
	} else {
		buf = alloc(min(size, firstFrameChunk))
	}
	window, windowStart := time.Now().Add(frameStallWindow), 0
	for len(buf) < size {
		if now := time.Now(); !now.Before(window) {
			if len(buf)-windowStart < frameProgressBytes && pooled && cap(buf) > firstFrameChunk && len(buf) <= cap(buf)/2 {
				// Stalled in a buffer at least twice what it holds: move
				// to the smallest class that holds it.
				small := append(alloc(max(len(buf), firstFrameChunk)), buf...)
				s.mem.bufs.put(buf)
				buf = small
			}
			if len(buf)-windowStart < frameProgressBytes && held > int64(cap(buf)) {
				// Stalled: keep only what the buffer holds.
				s.mem.frames.release(held - int64(cap(buf)))
				acct.frames -= held - int64(cap(buf))
				held = int64(cap(buf))
			}
			window, windowStart = now.Add(frameStallWindow), len(buf)
		}
		if len(buf) == cap(buf) {
			if held < need {
				// A frame that stalled reserves the rest before it grows.
				got, err := s.mem.frames.acquire(wait, need-held)
				if err != nil {
					return nil, false, fmt.Errorf("%w: %d bytes for a request not free within %v", errBudget, size, s.frameTimeout)
				}
				held += got
				acct.frames += got
			}
			grown := append(alloc(min(2*cap(buf), size)), buf...)
			if pooled {
				s.mem.bufs.put(buf)
			}
			buf = grown
		}
		d.setRead(minTime(window, deadline))
		n, err := br.Read(buf[len(buf):min(cap(buf), size)])
		buf = buf[:len(buf)+n]
		if err != nil && (!isTimeout(err) || !time.Now().Before(deadline)) {
			return nil, false, noEOF(err)
		}
	}
	return buf, pooled, nil
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// noEOF turns a clean end of stream inside a frame into
// io.ErrUnexpectedEOF.
func noEOF(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}
