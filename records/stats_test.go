package records

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestStats counts appends, duplicates, rounds and syncs, calls the
// sync observer once per sync, and counts the long polls waiting on a
// partition.
func TestStats(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t, t.TempDir())
	var observed atomic.Int64
	cfg.ObserveSync = func(d time.Duration) {
		require.GreaterOrEqual(t, d, time.Duration(0))
		observed.Add(1)
	}
	l := openWith(t, cfg, 2)
	raw := build(t, spec{n: 4, pid: 1, seq: 0, idem: true})
	produce(t, l, "t", 0, raw)
	setBaseOffset(raw, 0)
	produce(t, l, "t", 0, raw)
	produce(t, l, "t", 1, build(t, spec{n: 2}))
	st := l.Stats()
	require.Equal(t, Stats{
		Partitions: 2, BatchesAppended: 2, RecordsAppended: 6, BytesAppended: int64(len(raw) + len(build(t, spec{n: 2}))),
		Duplicates: 1, FlushRounds: 2, Syncs: 2,
	}, st)
	require.Equal(t, int64(2), observed.Load())
	ps, err := l.PartitionStats("t", 0)
	require.NoError(t, err)
	require.Equal(t, PartitionStats{HighWatermark: 4, LastStableOffset: 4, LogEndOffset: 4, Bytes: int64(len(raw)), Segments: 1, Producers: 1}, ps)

	w := l.Watch(WatchOffset{Topic: "t", Partition: 0, Offset: 4}, WatchOffset{Topic: "t", Partition: 1, Offset: 2})
	ps, err = l.PartitionStats("t", 0)
	require.NoError(t, err)
	require.Equal(t, 1, ps.Waiters, "a long poll waits on the partition")
	w.Close()
	ps, err = l.PartitionStats("t", 0)
	require.NoError(t, err)
	require.Zero(t, ps.Waiters, "and no more once it is closed")
}

// TestLimitedLog lets one line through per interval and counts the ones
// held back.
func TestLimitedLog(t *testing.T) {
	t.Parallel()
	var r limitedLog
	at := time.Unix(100, 0)
	n, ok := r.allow(at)
	require.True(t, ok)
	require.Zero(t, n)
	for i := range 4 {
		_, ok = r.allow(at.Add(time.Duration(i) * time.Second))
		require.False(t, ok)
	}
	n, ok = r.allow(at.Add(logInterval))
	require.True(t, ok)
	require.Equal(t, 4, n)
}
