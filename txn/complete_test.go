package txn

import (
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/minibroker/minibroker/internal/testutil"
	"github.com/minibroker/minibroker/records"
)

// faultyPartitions is the partition log with AppendMarker failing for
// one partition while fail is set, counting the attempts there.
type faultyPartitions struct {
	*records.Log
	mu       sync.Mutex
	tp       records.TopicPartition
	fail     error
	attempts int
}

func (p *faultyPartitions) AppendMarker(topic string, partition int32, m records.Marker) (*records.Pending, error) {
	p.mu.Lock()
	if (records.TopicPartition{Topic: topic, Partition: partition}) == p.tp {
		p.attempts++
		if p.fail != nil {
			defer p.mu.Unlock()
			return nil, p.fail
		}
	}
	p.mu.Unlock()
	return p.Log.AppendMarker(topic, partition, m)
}

func (p *faultyPartitions) set(fail error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.fail = fail
}

func (p *faultyPartitions) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.attempts
}

// TestEndTxnSkipsMarkersOfDeletedPartitions: a partition deleted while
// the transaction was open gets no marker, and the transaction completes
// at once, its other partitions marked (Kafka's marker channel drops the
// markers of partitions it finds no leader for).
func TestEndTxnSkipsMarkersOfDeletedPartitions(t *testing.T) {
	f := newFixture(t, t.TempDir())
	require.NoError(t, f.log.CreatePartitions("gone", 1))
	a := f.init("a")
	require.NoError(t, f.c.AddPartitions("a", a.pid, a.epoch, []records.TopicPartition{tp(0), {Topic: "gone", Partition: 0}}))
	require.NoError(t, f.produce(a, 0, 0, 2))
	_, err := f.log.DeleteTopic("gone")
	require.NoError(t, err)
	require.NoError(t, f.c.EndTxn("a", a.pid, a.epoch, true))
	require.Equal(t, CompleteCommit, f.c.Views()[0].State)
	require.Equal(t, [2]int64{3, 3}, [2]int64{f.hw(0), f.lso(0)}, "the commit marker in t-0")
	require.Empty(t, f.c.Expire(), "nothing left to retry")
	f.reopen()
	require.Equal(t, CompleteCommit, f.c.Views()[0].State)
	require.Equal(t, int64(3), f.hw(0), "the restart writes no marker again")
}

// TestFailedCompletionBacksOffAndLogsOnce: a decided transaction whose
// marker cannot be written is retried by the expiry step after a backoff
// that doubles (100 ms, 200 ms, ...), not at every step, and logged at
// Error once; it completes at the first retry after the fault clears.
func TestFailedCompletionBacksOffAndLogsOnce(t *testing.T) {
	f := newFixture(t, "")
	logs := testutil.NewLogRecorder(t.Output(), slog.LevelWarn)
	parts := &faultyPartitions{Log: f.log, tp: tp(1)}
	c, err := New(Config{Clock: f.clock, Partitions: parts, Offsets: f.offs, Logger: logs.Logger()})
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	pid, epoch, err := c.InitProducerID("a", time.Minute, -1, -1)
	require.NoError(t, err)
	require.NoError(t, c.AddPartitions("a", pid, epoch, []records.TopicPartition{tp(0), tp(1)}))
	parts.set(errInjected)
	require.ErrorIs(t, c.EndTxn("a", pid, epoch, true), ErrStorage)
	require.Equal(t, 1, parts.count())

	// 50 expiry steps, 100 ms apart: 5 s.
	for range 50 {
		f.clock.Advance(100 * time.Millisecond)
		c.Expire()
	}
	require.Equal(t, PrepareCommit, c.Views()[0].State)
	require.Equal(t, 6, parts.count(), "retries at 0.1, 0.3, 0.7, 1.5 and 3.1 s, not at each of the 50 steps")
	require.Len(t, logs.AtLevel(slog.LevelError), 1, "one Error line for the failure, not one per attempt")

	parts.set(nil)
	f.clock.Advance(6400 * time.Millisecond)
	c.Expire()
	require.Equal(t, CompleteCommit, c.Views()[0].State)
	require.Equal(t, 7, parts.count())
	done := logs.Find("transaction completed after failed attempts")
	require.Len(t, done, 1)
	require.Equal(t, "7", done[0].Attrs["attempts"])
	require.Len(t, logs.AtLevel(slog.LevelError), 1)
}

// TestRestartNeverRefusesADecidedTransaction: a decision logged before a
// restart whose completion fails at start-up does not stop the start; the
// transaction stays PrepareCommit until the expiry step completes it.
func TestRestartNeverRefusesADecidedTransaction(t *testing.T) {
	f := newFixture(t, t.TempDir())
	a := f.init("a")
	require.NoError(t, f.c.AddPartitions("a", a.pid, a.epoch, []records.TopicPartition{tp(0)}))
	require.NoError(t, f.produce(a, 0, 0, 1))
	d := entry{Kind: kindEnd, ID: "a", PID: a.pid, Epoch: a.epoch, Commit: true, Partitions: []records.TopicPartition{tp(0)}, First: []int64{0}}
	require.NoError(t, f.c.journal.append(d))
	require.NoError(t, f.c.Close())
	f.offs.fail = nil
	parts := &faultyPartitions{Log: f.log, tp: tp(0), fail: errInjected}
	c, err := New(Config{Clock: f.clock, Partitions: parts, Offsets: f.offs, Dir: f.dir})
	require.NoError(t, err, "the start does not fail on the broker's own decision")
	t.Cleanup(func() { _ = c.Close() })
	require.Equal(t, PrepareCommit, c.Views()[0].State)
	require.Equal(t, int64(0), f.lso(0))
	parts.set(nil)
	f.clock.Advance(retryBackoffMin)
	c.Expire()
	require.Equal(t, CompleteCommit, c.Views()[0].State)
	require.Equal(t, [2]int64{2, 2}, [2]int64{f.hw(0), f.lso(0)})
}
