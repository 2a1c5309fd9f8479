package server

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"
)

// Memory accounting: one type, memory, owns the budget of bytes the
// server holds for its requests and the buffer pool they are held in.
// Without it, 100 connections each sending a frame at the size cap, or a
// handful asking to describe groups of large members, hold gigabytes
// (docs/reliability.md). It has two lanes, each capped at
// Config.MaxInFlightBytes:
//
//   - frames: request frames larger than smallFrameBytes, from their size
//     prefix until their answer is written (Kafka's
//     queued.max.request.bytes and its MemoryPool). While the lane is
//     spent the connection is not read, and TCP pushes back on its peer.
//     A frame's buffer grows only as its bytes arrive, and a partial frame
//     that stalls keeps of its reservation only what it holds (frame.go).
//   - work: what a handler builds beyond its request: an answer that may
//     be large (a leader's JoinGroup, DescribeGroups, Metadata of every
//     topic, Fetch), the records a Fetch reads, the decompressors a
//     timestamp lookup or a compressed Produce uses, and what a request
//     holds decoded and answered, counted from its elements before it is
//     decoded (amplification.go).
//
// The rules that keep it from wedging (TestMemory*):
//
//   - A request never waits on itself. A reservation waits only while the
//     connection holds nothing in that lane; a request that already holds
//     some takes more at once, without waiting (account.reserve). Lanes are
//     waited for in one order, frames before work, and nothing that holds
//     work waits for anything in the budget, so holders always finish.
//   - An answer never needs more than it reserved: a handler reserves once
//     an upper bound on everything it will hold, then gives back what it
//     did not use (keep). A Fetch reserves the records it may read, the
//     buffers they go into and the encoded answer before it reads.
//   - A long poll holds nothing while it waits: it drops what it read,
//     gives its reservation back, and reads again once woken.
//   - Waits are bounded by FrameReadTimeout; a reservation that does not
//     come closes its connection (errBudget), is logged and counted.
//     Waiters are served in the order they came, so a large reservation is
//     not starved by a stream of smaller ones.
//
// Small frames and answers (heartbeats, commits, most of a consumer's
// traffic) reserve nothing, so a spent budget never holds up a heartbeat:
// the memory they take is bounded by the connections served times
// smallFrameBytes of frame and smallRequestBytes of what it decodes to and
// answers (a request whose bound passes that reserves it). What each lane
// holds, its peak, its waits and its refusals are in MemoryStats, which
// /metrics reports.

// smallFrameBytes is the largest frame or answer that reserves nothing.
const smallFrameBytes = 8 << 10

// DefaultMaxInFlightBytes is Config.MaxInFlightBytes's default.
const DefaultMaxInFlightBytes = 128 << 20

// errBudget closes a connection whose request could not get its memory
// within FrameReadTimeout.
var errBudget = errors.New("memory budget for requests in flight spent")

// memory is the server's memory accounting. It is safe for concurrent
// use.
type memory struct {
	frames lane
	work   lane
	bufs   bufPool
}

func newMemory(max int64) *memory {
	return &memory{frames: lane{max: max}, work: lane{max: max}}
}

// MemoryStats is what the memory budget holds and has done, per lane.
type MemoryStats struct {
	// Frames counts request frames being read or answered; Work the
	// answers, records and decompressors handlers hold.
	Frames, Work LaneStats
}

// LaneStats describes one lane of the memory budget.
type LaneStats struct {
	Max   int64 // bytes the lane may hold: Config.MaxInFlightBytes
	InUse int64 // bytes reserved now
	Peak  int64 // the most bytes reserved at once since start
	// Waits counts reservations that had to wait, WaitTime their total
	// wait, and Refusals those that gave up (the connection was closed).
	Waits    int64
	WaitTime time.Duration
	Refusals int64
	// Overdrawn counts reservations taken past Max without waiting by a
	// request that already held some (rare: a log that grew between a
	// Fetch's bound and its read by more than one batch).
	Overdrawn int64
}

// MemoryStats returns what the memory budget holds and has done.
func (s *Server) MemoryStats() MemoryStats {
	return MemoryStats{Frames: s.mem.frames.stats(), Work: s.mem.work.stats()}
}

// InFlightBytes returns the bytes the memory budget holds now, both lanes.
func (s *Server) InFlightBytes() int64 {
	return s.mem.frames.inUse() + s.mem.work.inUse()
}

// lane counts bytes reserved against a maximum. It is safe for
// concurrent use.
type lane struct {
	max int64

	mu    sync.Mutex
	used  int64     // guarded by mu
	peak  int64     // guarded by mu
	queue []*waiter // guarded by mu; waiting, oldest first
	st    LaneStats // guarded by mu; the counters
}

// waiter is one waiting acquire; ready is closed once its bytes are
// taken for it.
type waiter struct {
	n     int64
	ready chan struct{}
}

// acquire reserves n bytes, waiting behind earlier waiters while they
// would take the lane past its maximum, until ctx is done. n above the
// maximum is taken as the maximum, so that one large request can always
// run alone.
func (l *lane) acquire(ctx context.Context, n int64) (int64, error) {
	n = min(n, l.max)
	l.mu.Lock()
	if len(l.queue) == 0 && l.used+n <= l.max {
		l.take(n)
		l.mu.Unlock()
		return n, nil
	}
	w := &waiter{n: n, ready: make(chan struct{})}
	l.queue = append(l.queue, w)
	l.mu.Unlock()
	start := time.Now()
	var err error
	select {
	case <-w.ready:
	case <-ctx.Done():
		err = ctx.Err()
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.st.Waits++
	l.st.WaitTime += time.Since(start)
	if err == nil {
		return n, nil
	}
	select {
	case <-w.ready: // granted meanwhile: give it back
		l.used -= n
	default:
		l.queue = slices.DeleteFunc(l.queue, func(q *waiter) bool { return q == w })
	}
	l.st.Refusals++
	l.grant() // the head may have changed
	return 0, err
}

// add takes n bytes at once, past the maximum if need be: for a request
// that already holds some, which must never wait (memory.go's rules).
func (l *lane) add(n int64) {
	if n <= 0 {
		return
	}
	l.mu.Lock()
	if l.used+n > l.max {
		l.st.Overdrawn++
	}
	l.take(n)
	l.mu.Unlock()
}

// refuse counts a request refused because it could never fit in the
// lane (amplification.go).
func (l *lane) refuse() {
	l.mu.Lock()
	l.st.Refusals++
	l.mu.Unlock()
}

// take counts n more bytes. Called with mu held.
func (l *lane) take(n int64) {
	l.used += n
	l.peak = max(l.peak, l.used)
}

// release gives back n bytes and serves the waiters that now fit.
func (l *lane) release(n int64) {
	if n <= 0 {
		return
	}
	l.mu.Lock()
	l.used -= n
	l.grant()
	l.mu.Unlock()
}

// grant takes bytes for waiters from the head of the queue while they
// fit. Called with mu held.
func (l *lane) grant() {
	for len(l.queue) > 0 && l.used+l.queue[0].n <= l.max {
		w := l.queue[0]
		l.queue = l.queue[1:]
		l.take(w.n)
		close(w.ready)
	}
}

// inUse returns the bytes reserved now.
func (l *lane) inUse() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.used
}

func (l *lane) stats() LaneStats {
	l.mu.Lock()
	defer l.mu.Unlock()
	st := l.st
	st.Max, st.InUse, st.Peak = l.max, l.used, l.peak
	return st
}

// account is what one connection holds of the budget and the pool for
// the requests it has read and the answers it has not yet written. It is
// owned by the connection goroutine; a nil account (a handler called
// directly by a test) reserves nothing.
type account struct {
	mem    *memory
	wait   time.Duration // the longest a reservation waits: FrameReadTimeout
	frames int64         // reserved in the frames lane
	work   int64         // reserved in the work lane
	// pooled are buffers of the pool that answers not yet encoded refer
	// to (records a Fetch read), given back once they are (encoded).
	pooled [][]byte
}

// reserve takes n bytes of the work lane for what a handler is about to
// build. It waits, up to FrameReadTimeout, only when the connection holds
// no work yet; otherwise it takes them at once. A reservation of at most
// smallFrameBytes is not needed and not taken. It returns an error when
// the bytes did not come.
func (a *account) reserve(ctx context.Context, n int64) (int64, error) {
	if a == nil || n <= smallFrameBytes {
		return 0, nil
	}
	if a.work > 0 {
		a.mem.work.add(n)
		a.work += n
		return n, nil
	}
	ctx, cancel := context.WithTimeout(ctx, a.wait)
	defer cancel()
	got, err := a.mem.work.acquire(ctx, n)
	if err != nil {
		return 0, err
	}
	a.work += got
	return got, nil
}

// give gives back n bytes a handler reserved for its own work (a
// decompressor), once it is done with them.
func (a *account) give(n int64) {
	if a == nil || n <= 0 {
		return
	}
	n = min(n, a.work)
	a.mem.work.release(n)
	a.work -= n
}

// keep sets the work reservation to n bytes, once the handler knows it
// holds that much: the rest goes back to the lane. At most smallFrameBytes
// is kept as nothing, as it is not reserved. More than it reserved (a
// stored batch larger than the bound allowed for) is taken at once,
// without waiting, and counted as overdrawn when past the maximum.
func (a *account) keep(n int64) {
	if a == nil {
		return
	}
	if n <= smallFrameBytes {
		n = 0
	}
	if n > a.work {
		a.mem.work.add(n - a.work)
	} else {
		a.mem.work.release(a.work - n)
	}
	a.work = n
}

// hold makes b, a buffer of the pool, part of what the connection holds
// until the answer that refers to it is encoded.
func (a *account) hold(b []byte) {
	if a != nil {
		a.pooled = append(a.pooled, b)
	}
}

// drop gives back the pooled buffers at once: for an answer thrown away
// before it is encoded (a long poll that waits again).
func (a *account) drop() {
	if a == nil {
		return
	}
	for _, b := range a.pooled {
		a.mem.bufs.put(b)
	}
	a.pooled = a.pooled[:0]
}

// pooledBytes is the capacity of the pooled buffers held.
func (a *account) pooledBytes() int64 {
	var n int64
	if a != nil {
		for _, b := range a.pooled {
			n += int64(cap(b))
		}
	}
	return n
}

// encoded is called once an answer is encoded: the pooled buffers it
// referred to go back to the pool, and their bytes back to the work lane,
// down to what the encoded answers take.
func (a *account) encoded(out int64) {
	held := a.pooledBytes()
	a.drop()
	if held > 0 {
		a.keep(max(a.work-held, out))
	}
}

// settle gives everything back once the answers are written.
func (a *account) settle() {
	a.drop()
	a.mem.frames.release(a.frames)
	a.mem.work.release(a.work)
	a.frames, a.work = 0, 0
}
