package txn

import (
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/minibroker/minibroker/records"
)

// openWith opens a second coordinator on the fixture's log and directory
// with cfg's settings and seams, closing the fixture's own first.
func (f *fixture) openWith(cfg Config) *Coordinator {
	f.t.Helper()
	require.NoError(f.t, f.c.Close())
	cfg.Clock, cfg.Partitions, cfg.Offsets, cfg.Dir = f.clock, f.log, f.offs, f.dir
	if cfg.TransactionMaxTimeout == 0 {
		cfg.TransactionMaxTimeout = time.Hour
	}
	c, err := New(cfg)
	require.NoError(f.t, err)
	f.t.Cleanup(func() { _ = c.Close() })
	f.c = c
	return c
}

func TestIdleTransactionalIDsExpire(t *testing.T) {
	f := newFixture(t, t.TempDir())
	c := f.openWith(Config{Settings: Settings{TransactionalIDExpiration: 30 * time.Minute}})
	old := f.init("old")
	pid, epoch, err := c.InitProducerID("open", time.Hour, -1, -1)
	require.NoError(t, err)
	require.NoError(t, c.AddPartitions("open", pid, epoch, []records.TopicPartition{tp(0)}))
	f.clock.Advance(20 * time.Minute)
	f.init("new")
	f.clock.Advance(10*time.Minute - time.Second)
	c.Expire()
	require.Len(t, c.Views(), 3, "29:59 idle is not 30 minutes")
	f.clock.Advance(time.Second) // the idle ids are looked for once a second
	c.Expire()
	var ids []string
	for _, v := range c.Views() {
		ids = append(ids, v.TransactionalID)
	}
	require.Equal(t, []string{"new", "open"}, ids, "old is gone; open holds a transaction (Kafka's isExpirationAllowed), new is 10 minutes idle")
	require.Equal(t, int64(1), c.Stats().Expired)
	require.False(t, c.Describe([]string{"old"})[0].Found)

	// The tombstone and each id's last update survive a restart.
	f.reopen()
	c = f.openWith(Config{Settings: Settings{TransactionalIDExpiration: 30 * time.Minute}})
	require.Len(t, c.Views(), 2)
	f.clock.Advance(20 * time.Minute)
	c.Expire()
	require.Len(t, c.Views(), 1, "new was last updated 30 minutes ago, before the restart")
	require.Equal(t, "open", c.Views()[0].TransactionalID)

	again := f.init("old")
	require.NotEqual(t, old.pid, again.pid, "an expired id starts over with a new producer id")
	require.Equal(t, int16(0), again.epoch)
}

// fillGarbage bumps each of n ids rounds times: every bump after the
// first leaves its last init record garbage.
func fillGarbage(t *testing.T, c *Coordinator, n, rounds int) {
	t.Helper()
	for range rounds {
		for i := range n {
			_, _, err := c.InitProducerID(fmt.Sprintf("id-%03d", i), time.Minute, -1, -1)
			require.NoError(t, err)
		}
	}
}

func TestLogRewriteRunsOnlyWhenItPays(t *testing.T) {
	f := newFixture(t, t.TempDir())
	c := f.c
	c.journal.compactMin = 1
	fillGarbage(t, c, 100, 1)
	c.Expire()
	c.rewrites.Wait()
	require.Equal(t, int64(0), c.Stats().LogRewrites, "100 ids, no garbage")
	fillGarbage(t, c, 100, 1)
	c.Expire()
	c.rewrites.Wait()
	require.Equal(t, int64(0), c.Stats().LogRewrites, "garbage as large as the live records: not past the ratio")
	fillGarbage(t, c, 100, 1)
	c.Expire()
	c.rewrites.Wait()
	require.Equal(t, int64(1), c.Stats().LogRewrites, "garbage twice the live records")
	c.journal.mu.Lock()
	live, size := c.journal.live, c.journal.size
	c.journal.mu.Unlock()
	require.Equal(t, live, size, "the log holds only live records")
	for range 5 {
		c.Expire()
		c.rewrites.Wait()
	}
	require.Equal(t, int64(1), c.Stats().LogRewrites, "idle: no more rewrites")
	f.reopen()
	require.Len(t, f.c.Views(), 100)
	require.Equal(t, int16(2), f.c.Views()[0].Epoch, "three inits: epoch 2")
}

// TestRequestsProceedWhileTheLogIsRewritten holds a rewrite after it
// wrote the folded records and before it copies the tail: transactional
// requests complete meanwhile, and what they logged is in the rewritten
// log, as a restart shows.
func TestRequestsProceedWhileTheLogIsRewritten(t *testing.T) {
	f := newFixture(t, t.TempDir())
	c := f.c
	c.journal.compactMin = 1
	fillGarbage(t, c, 50, 3)
	held, release := make(chan struct{}), make(chan struct{})
	var releaseOnce sync.Once
	free := func() { releaseOnce.Do(func() { close(release) }) }
	t.Cleanup(free)
	c.journal.hold = func() {
		close(held)
		<-release
	}
	go c.Expire()
	<-held

	done := make(chan error, 1)
	go func() {
		b, err := func() (producer, error) {
			pid, epoch, err := c.InitProducerID("bystander", time.Minute, -1, -1)
			return producer{"bystander", pid, epoch}, err
		}()
		if err == nil {
			err = c.AddPartitions("bystander", b.pid, b.epoch, []records.TopicPartition{tp(0)})
		}
		if err == nil {
			err = f.produce(b, 0, 0, 1)
		}
		if err == nil {
			err = c.EndTxn("bystander", b.pid, b.epoch, true)
		}
		if err == nil {
			_, _, err = c.InitProducerID("id-007", time.Minute, -1, -1)
		}
		done <- err
	}()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(time.Minute):
		t.Fatal("a transaction waited for the rewrite")
	}
	free()
	c.rewrites.Wait()
	require.Equal(t, int64(1), c.Stats().LogRewrites)
	require.Equal(t, CompleteCommit, c.Describe([]string{"bystander"})[0].State)

	f.reopen()
	d := f.c.Describe([]string{"bystander", "id-007", "id-008"})
	require.Equal(t, []State{CompleteCommit, Empty, Empty}, []State{d[0].State, d[1].State, d[2].State})
	require.Equal(t, []int16{0, 3, 2}, []int16{d[0].Epoch, d[1].Epoch, d[2].Epoch}, "id-007's bump during the rewrite survives")
	require.Equal(t, [2]int64{2, 2}, [2]int64{f.hw(0), f.lso(0)}, "the commit was not redone")
}

// TestRestartAbortsWithOneSync: a restart that aborts N open transactions
// makes their decisions durable with one fdatasync of the log, counted
// through the log's sync seam.
func TestRestartAbortsWithOneSync(t *testing.T) {
	f := newFixture(t, t.TempDir())
	const n = 40
	for i := range n {
		p := f.init(fmt.Sprintf("open-%02d", i))
		require.NoError(t, f.c.AddPartitions(p.id, p.pid, p.epoch, []records.TopicPartition{tp(int32(i % 3))}))
		if i%2 == 0 {
			require.NoError(t, f.produce(p, int32(i%3), 0, 1))
		}
	}
	require.NoError(t, f.c.Close())
	require.NoError(t, f.log.Close())
	log, err := records.Open(records.Config{Dir: f.dir + "/logs"})
	require.NoError(t, err)
	t.Cleanup(func() { _ = log.Close() })
	f.log = log
	var syncs atomic.Int64
	c, err := New(Config{Clock: f.clock, Partitions: f.log, Offsets: f.offs, Dir: f.dir,
		Settings: Settings{TransactionMaxTimeout: time.Hour}, syncData: func(fl *os.File) error {
			syncs.Add(1)
			return syncData(fl)
		}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	require.Equal(t, int64(1), syncs.Load(), "one sync for %d aborts", n)
	require.Equal(t, int64(n), c.Stats().Aborted)
	for _, v := range c.Views() {
		require.Equal(t, CompleteAbort, v.State, v.TransactionalID)
		require.Equal(t, int16(1), v.Epoch, "each abort bumps its epoch")
	}
	for part := range int32(3) {
		require.Equal(t, f.hw(part), f.lso(part), "nothing left open in t-%d", part)
	}
	require.Len(t, f.aborted(0), 7, "the transactions with a record in t-0 (0, 6, ..., 36) were aborted")
}
