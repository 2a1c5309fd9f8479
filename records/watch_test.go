package records

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// fired reports whether w fired within a generous deadline; notFired that
// it has not fired yet.
func fired(w *Waiter) bool {
	select {
	case <-w.C():
		return true
	case <-time.After(10 * time.Second):
		return false
	}
}

func notFired(w *Waiter) bool {
	select {
	case <-w.C():
		return false
	default:
		return true
	}
}

// TestWaiterWakesOnWatchedPartition watches two partitions: an append to
// a third does not fire the waiter, an append to a watched one does.
func TestWaiterWakesOnWatchedPartition(t *testing.T) {
	t.Parallel()
	l := openWith(t, testConfig(t, ""), 3)
	w := l.Watch(WatchOffset{Topic: "t", Partition: 0}, WatchOffset{Topic: "t", Partition: 1}, WatchOffset{Topic: "nope", Partition: 0})
	defer w.Close()
	produce(t, l, "t", 2, build(t, spec{}))
	require.True(t, notFired(w), "an append to an unwatched partition")
	produce(t, l, "t", 1, build(t, spec{}))
	require.True(t, fired(w))
	w.Close()
	w.Close()
	for p := range int32(3) {
		part := l.lookup("t", p)
		part.wmu.Lock()
		require.Empty(t, part.watchers, "partition %d", p)
		part.wmu.Unlock()
	}
}

// TestWaiterAlreadyPast fires at once when the high watermark is already
// past the offset, and not when the fetcher is at the high watermark.
func TestWaiterAlreadyPast(t *testing.T) {
	t.Parallel()
	l := openWith(t, testConfig(t, ""), 1)
	produce(t, l, "t", 0, build(t, spec{n: 3}))
	w := l.Watch(WatchOffset{Topic: "t", Partition: 0, Offset: 2})
	require.True(t, fired(w))
	w.Close()
	w = l.Watch(WatchOffset{Topic: "t", Partition: 0, Offset: 3})
	defer w.Close()
	require.True(t, notFired(w))
	produce(t, l, "t", 0, build(t, spec{}))
	require.True(t, fired(w))
}

// TestManyIdleWaiters registers ten thousand waiters on one partition: one
// append fires them all and leaves nothing registered.
func TestManyIdleWaiters(t *testing.T) {
	t.Parallel()
	l := openWith(t, testConfig(t, ""), 1)
	ws := make([]*Waiter, 10000)
	for i := range ws {
		ws[i] = l.Watch(WatchOffset{Topic: "t", Partition: 0})
	}
	produce(t, l, "t", 0, build(t, spec{}))
	for _, w := range ws {
		require.True(t, fired(w))
		w.Close()
	}
	p := l.lookup("t", 0)
	p.wmu.Lock()
	defer p.wmu.Unlock()
	require.Empty(t, p.watchers)
}

// TestCloseFiresWaiters ends every long poll when the log closes.
func TestCloseFiresWaiters(t *testing.T) {
	t.Parallel()
	l, err := Open(testConfig(t, ""))
	require.NoError(t, err)
	require.NoError(t, l.CreatePartitions("t", 1))
	w := l.Watch(WatchOffset{Topic: "t", Partition: 0})
	defer w.Close()
	require.True(t, notFired(w))
	require.NoError(t, l.Close())
	require.True(t, fired(w))
}
