package server

import (
	"context"
	"errors"
	"slices"
	"sync"
)

// The memory budget: a cap on the request and response bytes the server
// holds at once, over every connection (Kafka's queued.max.request.bytes,
// unbounded by default there). Without it, 100 connections each sending a
// frame at the size cap, or a handful asking to describe groups of large
// members, hold gigabytes (docs/reliability.md).
//
// A request frame larger than smallFrameBytes reserves its whole size
// before its body is read, as Kafka's MemoryPool does: while the budget is
// spent, the connection is not read, and TCP pushes back on its peer (the
// frame's buffer still grows only as its bytes arrive). A handler whose
// answer may be large (a leader's JoinGroup, DescribeGroups, Metadata of
// every topic, Fetch) reserves a bound on it before building it; a Fetch
// gives back what it did not use once it has read (request.keep), so a
// long poll waits holding only its small answer. The reservations are
// released once the answer is written. Small
// frames (heartbeats, commits, most of a consumer's traffic) reserve
// nothing, so a spent budget never holds up a heartbeat: the memory they
// take is bounded by the connections served times smallFrameBytes.

// smallFrameBytes is the largest frame or answer that reserves nothing.
const smallFrameBytes = 8 << 10

// DefaultMaxInFlightBytes is Config.MaxInFlightBytes's default.
const DefaultMaxInFlightBytes = 128 << 20

// errBudget closes a connection whose request could not get its memory
// within FrameReadTimeout.
var errBudget = errors.New("memory budget for requests in flight spent")

// budget counts bytes reserved against a maximum. Waiters are served in
// the order they came, so a large reservation is not starved by a stream
// of smaller ones. It is safe for concurrent use.
type budget struct {
	max int64

	mu    sync.Mutex
	used  int64          // guarded by mu
	queue []*reservation // guarded by mu; waiting, oldest first
}

// reservation is one waiting acquire; ready is closed once its bytes are
// taken for it.
type reservation struct {
	n     int64
	ready chan struct{}
}

func newBudget(max int64) *budget {
	return &budget{max: max}
}

// acquire reserves n bytes, waiting behind earlier waiters while they
// would take the budget past its maximum, until ctx is done. n above the
// maximum is taken as the maximum, so that one large request can always
// run alone.
func (b *budget) acquire(ctx context.Context, n int64) (int64, error) {
	n = min(n, b.max)
	b.mu.Lock()
	if len(b.queue) == 0 && b.used+n <= b.max {
		b.used += n
		b.mu.Unlock()
		return n, nil
	}
	w := &reservation{n: n, ready: make(chan struct{})}
	b.queue = append(b.queue, w)
	b.mu.Unlock()
	select {
	case <-w.ready:
		return n, nil
	case <-ctx.Done():
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	select {
	case <-w.ready: // granted meanwhile: give it back
		b.used -= n
		b.grant()
	default:
		b.queue = slices.DeleteFunc(b.queue, func(q *reservation) bool { return q == w })
		b.grant() // the head may have changed
	}
	return 0, ctx.Err()
}

// release gives back n bytes and serves the waiters that now fit.
func (b *budget) release(n int64) {
	if n == 0 {
		return
	}
	b.mu.Lock()
	b.used -= n
	b.grant()
	b.mu.Unlock()
}

// grant takes bytes for waiters from the head of the queue while they
// fit. Called with mu held.
func (b *budget) grant() {
	for len(b.queue) > 0 && b.used+b.queue[0].n <= b.max {
		w := b.queue[0]
		b.queue = b.queue[1:]
		b.used += w.n
		close(w.ready)
	}
}

// inUse returns the bytes reserved now.
func (b *budget) inUse() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}
