package txn

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/minibroker/minibroker/clock"
	"github.com/minibroker/minibroker/records"
)

func TestInitProducerIDBumpsTheEpoch(t *testing.T) {
	f := newFixture(t, "")
	a := f.init("a")
	require.Equal(t, int16(0), a.epoch)
	a2 := f.init("a")
	require.Equal(t, a.pid, a2.pid)
	require.Equal(t, int16(1), a2.epoch)
	b := f.init("b")
	require.NotEqual(t, a.pid, b.pid)

	// KIP-360, as Kafka's prepareIncrementProducerEpoch: a bump that
	// named no epoch (a new instance) leaves no last epoch, so the
	// instance it replaced is fenced; the current epoch is bumped, and
	// remembered as the last; the last is a retry, answered unbumped.
	_, _, err := f.c.InitProducerID("a", time.Minute, a.pid, 0)
	require.ErrorIs(t, err, ErrFenced, "epoch 0 was replaced by a new instance's epoch 1")
	pid, epoch, err := f.c.InitProducerID("a", time.Minute, a.pid, 1)
	require.NoError(t, err)
	require.Equal(t, [2]int64{a.pid, 2}, [2]int64{pid, int64(epoch)})
	pid, epoch, err = f.c.InitProducerID("a", time.Minute, a.pid, 1)
	require.NoError(t, err, "a retry of the bump from epoch 1")
	require.Equal(t, [2]int64{a.pid, 2}, [2]int64{pid, int64(epoch)})
	_, _, err = f.c.InitProducerID("a", time.Minute, a.pid, 0)
	require.ErrorIs(t, err, ErrFenced, "epoch 0 is neither the current (2) nor the last (1)")
	_, _, err = f.c.InitProducerID("a", time.Minute, b.pid, 2)
	require.ErrorIs(t, err, ErrFenced)
}

func TestInitProducerIDChecks(t *testing.T) {
	f := newFixture(t, "")
	for _, id := range []string{"", strings.Repeat("x", 256), "bad\x00id", "\xff"} {
		_, _, err := f.c.InitProducerID(id, time.Second, -1, -1)
		require.ErrorIs(t, err, ErrInvalidTransactionalID, "%q", id)
	}
	_, _, err := f.c.InitProducerID("a", time.Hour+time.Millisecond, -1, -1)
	require.ErrorIs(t, err, ErrInvalidTimeout)
	_, _, err = f.c.InitProducerID("a", 0, -1, -1)
	require.ErrorIs(t, err, ErrInvalidTimeout)

	c, err := New(Config{Clock: f.clock, Partitions: f.log, Offsets: f.offs, MaxTransactionalIDs: 2})
	require.NoError(t, err)
	for _, id := range []string{"x", "y"} {
		_, _, err := c.InitProducerID(id, time.Second, -1, -1)
		require.NoError(t, err)
	}
	_, _, err = c.InitProducerID("z", time.Second, -1, -1)
	require.ErrorIs(t, err, ErrTooManyTransactionalIDs)
	_, _, err = c.InitProducerID("x", time.Second, -1, -1)
	require.NoError(t, err, "a known id is not a new one")
	_, err = New(Config{Clock: f.clock})
	require.Error(t, err)
	_, err = New(Config{Clock: clock.System{}, Partitions: f.log, Offsets: f.offs, Settings: Settings{TransactionMaxTimeout: -1}})
	require.Error(t, err)
}

func TestInitProducerIDAbortsAnOpenTransaction(t *testing.T) {
	f := newFixture(t, "")
	a := f.init("a")
	require.NoError(t, f.c.AddPartitions("a", a.pid, a.epoch, []records.TopicPartition{tp(0)}))
	require.NoError(t, f.produce(a, 0, 0, 2))
	require.Equal(t, int64(0), f.lso(0))
	a2 := f.init("a")
	require.Equal(t, int16(2), a2.epoch, "epoch + 1 for the abort, + 1 for the new producer")
	require.Equal(t, []records.AbortedTxn{{ProducerID: a.pid, FirstOffset: 0, LastOffset: 2}}, f.aborted(0))
	require.Equal(t, int64(3), f.lso(0))
	require.ErrorIs(t, f.produce(a, 0, 2, 1), ErrProduceFenced)
	require.Equal(t, int64(1), f.c.Stats().Aborted)
}

func TestRequestsInsideATransaction(t *testing.T) {
	f := newFixture(t, "")
	a := f.init("a")
	require.ErrorIs(t, f.c.AddPartitions("nope", a.pid, a.epoch, nil), ErrProducerIDMapping)
	require.ErrorIs(t, f.c.AddPartitions("a", a.pid+1, a.epoch, nil), ErrProducerIDMapping)
	require.ErrorIs(t, f.c.AddOffsets("a", a.pid, a.epoch+1, "g"), ErrFenced)
	require.ErrorIs(t, f.produce(a, 1, 0, 1), ErrInvalidTxnState, "no transaction")
	staged := false
	stage := func() error { staged = true; return nil }
	require.ErrorIs(t, f.c.StageOffsets("a", a.pid, a.epoch, "g", stage), ErrInvalidTxnState, "group not added")
	require.NoError(t, f.c.AddPartitions("a", a.pid, a.epoch, []records.TopicPartition{tp(0)}))
	require.ErrorIs(t, f.produce(a, 1, 0, 1), ErrInvalidTxnState, "t-1 not added")
	require.Equal(t, int64(0), f.hw(1), "nothing stored")
	require.NoError(t, f.produce(a, 0, 0, 1))
	require.NoError(t, f.c.AddOffsets("a", a.pid, a.epoch, "g"))
	require.NoError(t, f.c.StageOffsets("a", a.pid, a.epoch, "g", stage))
	require.True(t, staged)
	require.ErrorIs(t, f.c.StageOffsets("a", a.pid, a.epoch-1, "g", stage), ErrFenced)
	require.Equal(t, 1, f.c.Stats().Open)
}

func TestAddOffsetsBounded(t *testing.T) {
	f := newFixture(t, "")
	a := f.init("a")
	for i := range MaxGroupsPerTransaction {
		require.NoError(t, f.c.AddOffsets("a", a.pid, a.epoch, fmt.Sprintf("g%d", i)))
	}
	require.ErrorIs(t, f.c.AddOffsets("a", a.pid, a.epoch, "one-more"), ErrTooManyGroups)
	require.NoError(t, f.c.AddOffsets("a", a.pid, a.epoch, "g0"), "a group already added")
	require.NoError(t, f.c.EndTxn("a", a.pid, a.epoch, false))
	require.NoError(t, f.c.AddOffsets("a", a.pid, a.epoch, "one-more"), "the next transaction starts empty")
}
