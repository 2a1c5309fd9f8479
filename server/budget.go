package server

import (
	"context"
	"errors"
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
// gives back what it did not use once it has read (request.shrink), so a
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

// budget counts bytes reserved against a maximum. It is safe for
// concurrent use.
type budget struct {
	max int64

	mu   sync.Mutex
	used int64         // guarded by mu
	wake chan struct{} // guarded by mu; closed and replaced by every release
}

func newBudget(max int64) *budget {
	return &budget{max: max, wake: make(chan struct{})}
}

// acquire reserves n bytes, waiting while they would take the budget past
// its maximum, until ctx is done. n above the maximum is taken as the
// maximum, so that one large request can always run alone.
func (b *budget) acquire(ctx context.Context, n int64) (int64, error) {
	n = min(n, b.max)
	for {
		b.mu.Lock()
		if b.used+n <= b.max {
			b.used += n
			b.mu.Unlock()
			return n, nil
		}
		wake := b.wake
		b.mu.Unlock()
		select {
		case <-wake:
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
}

// release gives back n bytes and wakes every waiter.
func (b *budget) release(n int64) {
	if n == 0 {
		return
	}
	b.mu.Lock()
	b.used -= n
	close(b.wake)
	b.wake = make(chan struct{})
	b.mu.Unlock()
}

// inUse returns the bytes reserved now.
func (b *budget) inUse() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}
