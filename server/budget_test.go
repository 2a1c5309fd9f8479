package server

import (
	"context"
	"encoding/binary"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestBudgetAcquireRelease(t *testing.T) {
	t.Parallel()
	b := newBudget(100)
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
	b.release(60)
	require.Equal(t, int64(100), <-done, "a request above the maximum takes the maximum, alone")
	require.Equal(t, int64(100), b.inUse())
	b.release(100)
	require.Zero(t, b.inUse())
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
func TestBudgetHoldsLargeFramesNotHeartbeats(t *testing.T) {
	t.Parallel()
	e := newEnvWith(t, envOptions{config: func(cfg *Config) {
		cfg.MaxFrameBytes = 64 << 10
		cfg.MaxInFlightBytes = 64 << 10
		cfg.FrameReadTimeout = 300 * time.Millisecond
	}})
	addr := e.serve()
	member := e.join("c", "g", "", "orders")

	first := dial(t, addr, "big")
	require.NoError(t, first.Send(largeFrameHead(40<<10))) // a body that never comes
	eventually(t, testTimeout, func() bool { return e.srv.InFlightBytes() == 40<<10 }, "the first large frame reserves its size")

	second := dial(t, addr, "big2")
	require.NoError(t, second.Send(largeFrameHead(40<<10)))
	hb := dial(t, addr, "c")
	resp := roundTrip[*kmsg.HeartbeatResponse](t, hb, heartbeatRequest(4, "g", member.MemberID, member.Generation))
	require.Zero(t, resp.ErrorCode, "a heartbeat needs no budget")
	require.Equal(t, int64(40<<10), e.srv.InFlightBytes(), "the second waits: 80 KiB would pass the 64 KiB budget")

	// The first frame's body never comes: its read times out, its
	// reservation is released, and the second one gets it, times out on
	// its own missing body in turn, and gives it back.
	requireClosed(t, first)
	requireClosed(t, second)
	eventually(t, testTimeout, func() bool { return e.srv.InFlightBytes() == 0 }, "every reservation given back")
	require.NotEmpty(t, e.logs.Find("closing connection"))
}

// TestLongPollHoldsOnlyItsAnswer: a Fetch reserves its MaxBytes to read,
// then keeps only a bound on the answer it built; a long poll waits
// holding that small bound, not the 50 MiB a consumer asks for, so that
// polling consumers do not spend the budget of everyone else.
func TestLongPollHoldsOnlyItsAnswer(t *testing.T) {
	t.Parallel()
	e := newEnvWith(t, envOptions{config: func(cfg *Config) { cfg.MaxFetchWait = time.Minute }})
	c := dial(t, e.serve(), "c")
	fetch := fetchRequest(12, time.Minute, "orders", 0, 0, 1)
	fetch.MaxBytes = 50 << 20
	require.NoError(t, c.Send(rawRequest(fetch, 1, "c")))
	eventually(t, testTimeout, func() bool { n := e.srv.InFlightBytes(); return n > 0 && n < 1<<10 },
		"the waiting fetch holds a bound on its empty answer")
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
