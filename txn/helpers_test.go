package txn

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/minibroker/minibroker/clock"
	"github.com/minibroker/minibroker/offsets"
	"github.com/minibroker/minibroker/records"
)

var errInjected = errors.New("injected failure")

// fakeOffsets is the group coordinator's side: staged offsets per group
// and producer, and what commits applied.
type fakeOffsets struct {
	mu        sync.Mutex
	staged    map[string]map[int64][]offsets.Entry
	committed map[string][]offsets.Entry
	fail      error
}

func newFakeOffsets() *fakeOffsets {
	return &fakeOffsets{staged: map[string]map[int64][]offsets.Entry{}, committed: map[string][]offsets.Entry{}}
}

func (f *fakeOffsets) stage(group string, pid int64, es ...offsets.Entry) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.staged[group] == nil {
		f.staged[group] = map[int64][]offsets.Entry{}
	}
	f.staged[group][pid] = append(f.staged[group][pid], es...)
}

func (f *fakeOffsets) TxnStaged(group string, pid int64) []offsets.Entry {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]offsets.Entry(nil), f.staged[group][pid]...)
}

func (f *fakeOffsets) EndTxnOffsets(group string, pid int64, es []offsets.Entry, commit bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail != nil {
		return f.fail
	}
	if commit {
		f.committed[group] = append(f.committed[group], es...)
	}
	delete(f.staged[group], pid)
	return nil
}

func (f *fakeOffsets) get(group string) []offsets.Entry {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.committed[group]
}

// fixture is a coordinator over a partition log with topic "t" (3
// partitions) on a manual clock.
type fixture struct {
	t     *testing.T
	c     *Coordinator
	log   *records.Log
	offs  *fakeOffsets
	clock *clock.Manual
	dir   string
}

func newFixture(t *testing.T, dir string) *fixture {
	t.Helper()
	logDir := ""
	if dir != "" {
		logDir = dir + "/logs"
	}
	log, err := records.Open(records.Config{Dir: logDir})
	require.NoError(t, err)
	t.Cleanup(func() { _ = log.Close() })
	require.NoError(t, log.CreatePartitions("t", 3))
	f := &fixture{t: t, log: log, offs: newFakeOffsets(), clock: clock.NewManual(time.UnixMilli(0)), dir: dir}
	f.open()
	return f
}

// open (re)opens the coordinator on the fixture's directory.
func (f *fixture) open() {
	f.t.Helper()
	c, err := New(Config{Clock: f.clock, Partitions: f.log, Offsets: f.offs, Dir: f.dir, Settings: Settings{TransactionMaxTimeout: time.Hour}})
	require.NoError(f.t, err)
	f.t.Cleanup(func() { _ = c.Close() })
	f.c = c
}

// reopen closes the coordinator and the log and opens both again, as a
// restart does.
func (f *fixture) reopen() {
	f.t.Helper()
	require.NoError(f.t, f.c.Close())
	require.NoError(f.t, f.log.Close())
	log, err := records.Open(records.Config{Dir: f.dir + "/logs"})
	require.NoError(f.t, err)
	f.t.Cleanup(func() { _ = log.Close() })
	f.log = log
	f.open()
}

type producer struct {
	id    string
	pid   int64
	epoch int16
}

func (f *fixture) init(id string) producer {
	f.t.Helper()
	pid, epoch, err := f.c.InitProducerID(id, time.Minute, -1, -1)
	require.NoError(f.t, err)
	return producer{id, pid, epoch}
}

func tp(p int32) records.TopicPartition { return records.TopicPartition{Topic: "t", Partition: p} }

// produce appends a transactional batch of n records for p to partition
// part through the coordinator's check.
func (f *fixture) produce(p producer, part int32, seq int32, n int) error {
	spec := records.BatchSpec{Idempotent: true, ProducerID: p.pid, ProducerEpoch: p.epoch, BaseSequence: seq}
	for range n {
		spec.Records = append(spec.Records, records.Record{Value: []byte("v")})
	}
	raw := records.EncodeBatch(spec)
	raw[22] |= 0x10
	b, err := f.log.Validate(fixCRC(raw))
	require.NoError(f.t, err)
	return f.c.Produce(p.id, p.pid, p.epoch, tp(part), func() error {
		pd, err := f.log.Append("t", part, b)
		if err != nil {
			return err
		}
		_, err = pd.Wait()
		return err
	})
}

// lso is partition part's last stable offset.
func (f *fixture) lso(part int32) int64 {
	f.t.Helper()
	lso, err := f.log.LastStableOffset("t", part)
	require.NoError(f.t, err)
	return lso
}

func (f *fixture) hw(part int32) int64 {
	f.t.Helper()
	_, hw, err := f.log.Offsets("t", part)
	require.NoError(f.t, err)
	return hw
}

// aborted is partition part's aborted transactions from offset 0.
func (f *fixture) aborted(part int32) []records.AbortedTxn {
	f.t.Helper()
	res, err := f.log.ReadCommittedAlloc("t", part, 0, 1<<20, true, func(n int) []byte { return make([]byte, 0, n) })
	require.NoError(f.t, err)
	return res.Aborted
}

// fixCRC recomputes a batch's CRC-32C after an edit.
func fixCRC(b []byte) []byte {
	binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[21:], castagnoli))
	return b
}

// removeJournal deletes the transaction log of dir.
func removeJournal(dir string) error { return os.Remove(filepath.Join(dir, JournalFile)) }

// powerLoss closes the coordinator and the log and cuts the transaction
// log back to what its last sync covered (what a power loss may leave of
// records written and not synced), then opens both again.
func (f *fixture) powerLoss() {
	f.t.Helper()
	f.c.journal.mu.Lock()
	durable := f.c.journal.durable
	f.c.journal.mu.Unlock()
	require.NoError(f.t, f.c.Close())
	require.NoError(f.t, os.Truncate(filepath.Join(f.dir, JournalFile), durable))
	require.NoError(f.t, f.log.Close())
	log, err := records.Open(records.Config{Dir: f.dir + "/logs"})
	require.NoError(f.t, err)
	f.t.Cleanup(func() { _ = log.Close() })
	f.log = log
	f.open()
}

// syncs is the transaction log's fdatasyncs so far.
func (f *fixture) syncs() int64 { return f.c.Stats().LogSyncs }
