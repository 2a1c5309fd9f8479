package server

import (
	"context"
	"encoding/binary"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/testkit/wiretest"
)

func TestMemoryLaneAcquireRelease(t *testing.T) {
	t.Parallel()
	b := &lane{max: 100}
	got, err := b.acquire(t.Context(), 60)
	require.NoError(t, err)
	require.Equal(t, int64(60), got)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Millisecond)
	defer cancel()
	_, err = b.acquire(ctx, 50)
	require.ErrorIs(t, err, context.DeadlineExceeded, "60 + 50 is over 100")

	done := make(chan int64, 1)
	go func() {
		got, _ := b.acquire(t.Context(), 500) // above the maximum: waits for all of it
		done <- got
	}()
	eventually(t, testTimeout, func() bool { b.mu.Lock(); defer b.mu.Unlock(); return len(b.queue) == 1 }, "it waits")
	b.release(60)
	require.Equal(t, int64(100), <-done, "a request above the maximum takes the maximum, alone")
	require.Equal(t, int64(100), b.inUse())
	b.release(100)
	require.Zero(t, b.inUse())
	st := b.stats()
	require.Equal(t, int64(100), st.Peak)
	require.Equal(t, int64(2), st.Waits, "the one that gave up and the one above the maximum")
	require.Equal(t, int64(1), st.Refusals)
	require.Positive(t, st.WaitTime)
}

// largeFrameHead is the start of a frame of size bytes: its size prefix
// and the header of a Heartbeat v4 (a real request would follow).
func largeFrameHead(size int32) []byte {
	head := binary.BigEndian.AppendUint32(nil, uint32(size))
	head = binary.BigEndian.AppendUint16(head, uint16(kmsg.Heartbeat))
	return binary.BigEndian.AppendUint16(head, 4)
}

// TestBudgetHoldsLargeFramesNotHeartbeats: large frames reserve their size
// before their body is read; while the budget is spent another large frame
// waits, but a heartbeat on a third connection is answered at once. A
// frame that cannot get its memory within FrameReadTimeout closes its
// connection, and every reservation is given back.
func TestMemoryHoldsLargeFramesNotHeartbeats(t *testing.T) {
	t.Parallel()
	e := newEnvWith(t, envOptions{config: func(cfg *Config) {
		cfg.MaxFrameBytes = 64 << 10
		cfg.MaxInFlightBytes = 64 << 10
		cfg.FrameReadTimeout = 300 * time.Millisecond
	}})
	addr := e.serve()
	member := e.join("c", "g", "", "orders")

	first := wiretest.Dial(t, addr, "big")
	require.NoError(t, first.Send(largeFrameHead(40<<10))) // a body that never comes
	eventually(t, testTimeout, func() bool { return e.srv.InFlightBytes() == 40<<10 }, "the first large frame reserves its size")

	second := wiretest.Dial(t, addr, "big2")
	require.NoError(t, second.Send(largeFrameHead(40<<10)))
	hb := wiretest.Dial(t, addr, "c")
	resp := wiretest.Do[*kmsg.HeartbeatResponse](t, hb, wiretest.HeartbeatRequest(4, "g", member.MemberID, member.Generation))
	require.Zero(t, resp.ErrorCode, "a heartbeat needs no budget")
	require.Equal(t, int64(40<<10), e.srv.InFlightBytes(), "the second waits: 80 KiB would pass the 64 KiB budget")

	// The first frame's body never comes: its read times out, its
	// reservation is released, and the second one gets it, times out on
	// its own missing body in turn, and gives it back.
	wiretest.RequireClosed(t, first)
	wiretest.RequireClosed(t, second)
	eventually(t, testTimeout, func() bool { return e.srv.InFlightBytes() == 0 }, "every reservation given back")
	require.NotEmpty(t, e.logs.Find("closing connection"))
}

// TestBudgetServesWaitersInOrder: a large reservation waiting first is
// served before smaller ones that came after it, though they would fit.
func TestMemoryLaneServesWaitersInOrder(t *testing.T) {
	t.Parallel()
	b := &lane{max: 100}
	_, err := b.acquire(t.Context(), 60)
	require.NoError(t, err)
	order := make(chan int64, 2)
	go func() {
		n, _ := b.acquire(t.Context(), 80)
		order <- n
	}()
	eventually(t, testTimeout, func() bool { b.mu.Lock(); defer b.mu.Unlock(); return len(b.queue) == 1 }, "the large one waits")
	go func() {
		n, _ := b.acquire(t.Context(), 30) // would fit beside the 60, but comes second
		order <- n
	}()
	eventually(t, testTimeout, func() bool { b.mu.Lock(); defer b.mu.Unlock(); return len(b.queue) == 2 }, "the small one waits behind it")
	b.release(60)
	require.Equal(t, int64(80), <-order)
	b.release(80)
	require.Equal(t, int64(30), <-order)
	b.release(30)
	require.Zero(t, b.inUse())

	// A waiter that gives up leaves the queue, and the next one moves up.
	_, err = b.acquire(t.Context(), 90)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	gaveUp := make(chan error, 1)
	go func() { _, err := b.acquire(ctx, 50); gaveUp <- err }()
	eventually(t, testTimeout, func() bool { b.mu.Lock(); defer b.mu.Unlock(); return len(b.queue) == 1 }, "waiting")
	cancel()
	require.ErrorIs(t, <-gaveUp, context.Canceled)
	got, err := b.acquire(t.Context(), 10)
	require.NoError(t, err, "nobody waits ahead of it any more")
	require.Equal(t, int64(10), got)
}

// TestBudgetLongPollsHoldOnlyTheirAnswers: a Fetch reserves its MaxBytes
// before it reads, but a long poll waits holding only its small answer,
// so more long polls than the budget has room for at their MaxBytes wait
// side by side, and a fetch with data is answered meanwhile. (Holding
// MaxBytes through the wait let three kgo consumers, at kgo's default
// 50 MiB, spend the default 128 MiB budget; the third waited for a
// reservation instead of for records.) Woken by a produce, each reserves
// again, reads, and keeps what it read until its answer is written.
//
// Not parallel: it counts the process's goroutines waiting in handleFetch,
// and parallel tests of the package are paused while it runs.
func TestMemoryLongPollsHoldNothingWhileTheyWait(t *testing.T) {
	const maxBytes = 1 << 20
	e := newEnvWith(t, envOptions{config: func(cfg *Config) {
		cfg.MaxInFlightBytes = 2 * maxBytes
		cfg.MaxFrameBytes = maxBytes
		cfg.MaxFetchWait = time.Minute
	}})
	addr := e.serve()
	const polls = 4 // 4 MiB at MaxBytes: twice the budget
	done := make(chan *kmsg.FetchResponse, polls)
	for i := range polls {
		c := wiretest.Dial(t, addr, "poll")
		req := fetchRequest(12, testTimeout/2, "orders", 0, int32(i))
		req.MaxBytes = maxBytes
		go func() { done <- wiretest.Do[*kmsg.FetchResponse](t, c, req) }()
	}
	eventually(t, testTimeout, func() bool {
		waiting, acquiring := fetchesWaiting()
		return waiting == polls && acquiring == 0
	}, "every long poll waits for records, none for the budget")
	require.Zero(t, e.srv.InFlightBytes(), "a waiting long poll holds nothing")

	e.produce("payments", 0, "x")
	resp := wiretest.Do[*kmsg.FetchResponse](t, wiretest.Dial(t, addr, "c"), fetchRequest(12, time.Minute, "payments", 0, 0))
	require.Equal(t, []string{"0:x"}, values(t, resp.Topics[0].Partitions[0].RecordBatches), "served beside them")

	for i := range polls {
		e.produce("orders", int32(i), "woken")
	}
	for range polls {
		select {
		case resp := <-done:
			require.Equal(t, []string{"0:woken"}, values(t, resp.Topics[0].Partitions[0].RecordBatches))
		case <-time.After(testTimeout):
			t.Fatal("a long poll was not woken")
		}
	}
	eventually(t, testTimeout, func() bool { return e.srv.InFlightBytes() == 0 }, "every reservation given back")
}

// fetchesWaiting counts the goroutines in handleFetch that wait in its
// select for records, and those that wait for the memory budget.
func fetchesWaiting() (waiting, acquiring int) {
	buf := make([]byte, 1<<20)
	for _, g := range strings.Split(string(buf[:runtime.Stack(buf, true)]), "\ngoroutine ") {
		switch {
		case !strings.Contains(g, "(*Server).handleFetch"):
		case strings.Contains(g, "(*lane).acquire"):
			acquiring++
		case strings.Contains(g, " [select"):
			waiting++
		}
	}
	return waiting, acquiring
}

// TestLongPollHoldsOnlyItsAnswer: a Fetch reserves what it can read, not
// its MaxBytes, then keeps only a bound on the answer it built; a long
// poll waits
// holding that small bound, not the 50 MiB a consumer asks for, so that
// polling consumers do not spend the budget of everyone else.
func TestMemoryLongPollHoldsNothing(t *testing.T) {
	t.Parallel()
	e := newEnvWith(t, envOptions{config: func(cfg *Config) { cfg.MaxFetchWait = time.Minute }})
	c := wiretest.Dial(t, e.serve(), "c")
	fetch := fetchRequest(12, time.Minute, "orders", 0, 0, 1)
	fetch.MaxBytes = 50 << 20
	require.NoError(t, c.Send(rawRequest(fetch, 1, "c")))
	eventually(t, testTimeout, func() bool {
		st, err := e.log.PartitionStats("orders", 1)
		require.NoError(t, err)
		return st.Waiters == 1
	}, "the fetch waits for records")
	require.Zero(t, e.srv.InFlightBytes(), "a waiting long poll holds nothing")
	e.produce("orders", 1, "a")
	require.NoError(t, c.SetDeadline(time.Now().Add(testTimeout)))
	frame, err := c.ReadFrame()
	require.NoError(t, err)
	resp := kmsg.NewPtrFetchResponse()
	resp.Version = 12
	require.NoError(t, resp.ReadFrom(frame[5:])) // correlation id, header tags
	require.Equal(t, []string{"0:a"}, values(t, resp.Topics[0].Partitions[1].RecordBatches))
	eventually(t, testTimeout, func() bool { return e.srv.InFlightBytes() == 0 }, "every reservation given back")
}

// TestMemoryRequestNeverWaitsOnItself: a connection that holds work takes
// more at once, past the maximum if need be (counted as overdrawn),
// instead of queueing behind others for bytes it may itself hold; keep
// shrinks what it holds and settle gives everything back.
func TestMemoryRequestNeverWaitsOnItself(t *testing.T) {
	t.Parallel()
	m := newMemory(100 << 10)
	other, err := m.work.acquire(t.Context(), 40<<10)
	require.NoError(t, err)
	a := &account{mem: m, wait: testTimeout}
	_, err = a.reserve(t.Context(), 60<<10)
	require.NoError(t, err)
	require.Equal(t, int64(100<<10), m.work.inUse())

	// Someone waits behind; the connection's own second reservation does
	// not queue behind them.
	queued := make(chan error, 1)
	go func() { _, err := m.work.acquire(t.Context(), 50<<10); queued <- err }()
	eventually(t, testTimeout, func() bool { m.work.mu.Lock(); defer m.work.mu.Unlock(); return len(m.work.queue) == 1 }, "a stranger waits")
	_, err = a.reserve(t.Context(), 30<<10)
	require.NoError(t, err, "taken at once")
	require.Equal(t, int64(130<<10), m.work.inUse())
	require.Equal(t, int64(1), m.work.stats().Overdrawn)

	a.keep(10 << 10)
	require.NoError(t, <-queued, "the stranger gets its bytes once they are given back")
	require.Equal(t, int64(10<<10), a.work)
	require.Equal(t, other+10<<10+50<<10, m.work.inUse(), "keep gave back all but 10 KiB")
	a.settle()
	require.Equal(t, other+50<<10, m.work.inUse())
	require.Equal(t, int64(130<<10), m.work.stats().Peak)
}

// TestMemoryReserveWaitIsBounded: a reservation that cannot get its bytes
// within the wait fails, the request is marked to close its connection
// with errBudget, and the refusal and the wait are counted.
func TestMemoryReserveWaitIsBounded(t *testing.T) {
	t.Parallel()
	m := newMemory(64 << 10)
	_, err := m.work.acquire(t.Context(), 64<<10)
	require.NoError(t, err)
	r := &request{ctx: t.Context(), acct: &account{mem: m, wait: 20 * time.Millisecond}}
	require.False(t, r.reserve(32<<10))
	require.ErrorIs(t, r.failed, errBudget)
	st := m.work.stats()
	require.Equal(t, int64(1), st.Waits)
	require.Equal(t, int64(1), st.Refusals)
	require.GreaterOrEqual(t, st.WaitTime, 20*time.Millisecond)
	require.Zero(t, r.acct.work)

	small := &request{ctx: t.Context(), acct: &account{mem: m, wait: 20 * time.Millisecond}}
	require.True(t, small.reserve(smallFrameBytes), "a small answer needs no reservation")
	require.Zero(t, small.acct.work)
}

// TestMemoryEncodedGivesBackPooledBuffers: once an answer is encoded, the
// pooled buffers it referred to leave the reservation, down to what the
// encoded answer itself takes.
func TestMemoryEncodedGivesBackPooledBuffers(t *testing.T) {
	t.Parallel()
	m := newMemory(1 << 20)
	a := &account{mem: m, wait: testTimeout}
	buf := m.bufs.get(100 << 10) // a 128 KiB class
	_, err := a.reserve(t.Context(), 300<<10)
	require.NoError(t, err)
	a.hold(buf)
	a.keep(a.pooledBytes() + 130<<10)
	require.Equal(t, int64(258<<10), m.work.inUse())
	a.encoded(130 << 10)
	require.Empty(t, a.pooled)
	require.Equal(t, int64(130<<10), m.work.inUse(), "only the encoded answer is held until the write")
	a.settle()
	require.Zero(t, m.work.inUse())
}
