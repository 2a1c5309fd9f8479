package records

import (
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestProducerIDsNeverReused hands out ids across restarts: each restart
// continues past the block the file reserved, so no id comes twice.
func TestProducerIDsNeverReused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	seen := map[int64]bool{}
	for round := range 3 {
		l, err := Open(testConfig(t, dir))
		require.NoError(t, err)
		for range 3 {
			id, epoch, err := l.InitProducerID()
			require.NoError(t, err)
			require.Zero(t, epoch)
			require.False(t, seen[id], "id %d handed out twice", id)
			seen[id] = true
		}
		require.NoError(t, l.Close())
		data, err := os.ReadFile(filepath.Join(dir, producerIDFile))
		require.NoError(t, err)
		require.JSONEq(t, `{"version":1,"next":`+strconv.Itoa((round+1)*producerIDBlock)+`}`, string(data))
	}
	require.Equal(t, map[int64]bool{0: true, 1: true, 2: true, 1000: true, 1001: true, 1002: true, 2000: true, 2001: true, 2002: true}, seen)
}

// TestProducerIDsPastTheLogs starts past the largest producer id found in
// the logs, even with the block file gone.
func TestProducerIDsPastTheLogs(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	l, err := openAnyPID(testConfig(t, dir))
	require.NoError(t, err)
	require.NoError(t, l.CreatePartitions("t", 1))
	produce(t, l, "t", 0, build(t, spec{pid: 5000, seq: 0, idem: true}))
	require.NoError(t, l.Close())
	require.NoFileExists(t, filepath.Join(dir, producerIDFile))

	l = open(t, testConfig(t, dir))
	id, _, err := l.InitProducerID()
	require.NoError(t, err)
	require.Equal(t, int64(5001), id)
}

// TestProducerIDFileCorrupt refuses to start on a block file it cannot
// read: an empty state would hand out ids again.
func TestProducerIDFileCorrupt(t *testing.T) {
	t.Parallel()
	for name, content := range map[string]string{
		"not json":      "{",
		"wrong version": `{"version":2,"next":5}`,
		"negative":      `{"version":1,"next":-5}`,
		"unknown field": `{"version":1,"next":5,"x":1}`,
		"two documents": `{"version":1,"next":5}{}`,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			require.NoError(t, os.WriteFile(filepath.Join(dir, producerIDFile), []byte(content), 0o644))
			_, err := Open(testConfig(t, dir))
			require.ErrorIs(t, err, ErrCorrupt)
			require.ErrorContains(t, err, producerIDFile)
		})
	}
}

// TestProducerIDsInMemory counts from 0 with nothing persisted.
func TestProducerIDsInMemory(t *testing.T) {
	t.Parallel()
	l := open(t, testConfig(t, ""))
	for want := range int64(3) {
		id, _, err := l.InitProducerID()
		require.NoError(t, err)
		require.Equal(t, want, id)
	}
}

// TestProducerIDFileWriteFails reports a failed reservation as a storage
// error and hands out nothing; the next call tries again.
func TestProducerIDFileWriteFails(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t, t.TempDir())
	ffs := newFaultFS(osFS{})
	cfg.fs = ffs
	l := open(t, cfg)
	ffs.set(&ffs.atomic, func(string) error { return errInjected })
	_, _, err := l.InitProducerID()
	require.ErrorIs(t, err, ErrStorage)
	require.ErrorIs(t, err, errInjected)
	ffs.set(&ffs.atomic, nil)
	id, _, err := l.InitProducerID()
	require.NoError(t, err)
	require.Equal(t, int64(0), id)
}

// TestProduceUnknownProducerID refuses an idempotent batch whose producer
// id was never handed out: at or above the reserved block's end.
func TestProduceUnknownProducerID(t *testing.T) {
	t.Parallel()
	l := openStrict(t, testConfig(t, t.TempDir()))
	require.NoError(t, l.CreatePartitions("t", 1))
	_, err := tryProduce(l, "t", 0, build(t, spec{pid: 0, idem: true}))
	require.ErrorIs(t, err, ErrUnknownProducerID)
	require.ErrorContains(t, err, "producer id 0 was never handed out")

	id, _, err := l.InitProducerID()
	require.NoError(t, err)
	require.Equal(t, int64(0), id)
	a := produce(t, l, "t", 0, build(t, spec{pid: 0, idem: true}))
	require.Equal(t, int64(0), a.BaseOffset)
	// The rest of the block is reserved in the file: below the mark.
	a = produce(t, l, "t", 0, build(t, spec{pid: producerIDBlock - 1, idem: true}))
	require.Equal(t, int64(1), a.BaseOffset)
	for _, pid := range []int64{producerIDBlock, math.MaxInt64 - 1} {
		_, err := tryProduce(l, "t", 0, build(t, spec{pid: pid, idem: true}))
		require.ErrorIs(t, err, ErrUnknownProducerID, "pid %d", pid)
	}
	st, err := l.PartitionStats("t", 0)
	require.NoError(t, err)
	require.Equal(t, int64(2), st.HighWatermark)
	// A batch without a producer id is not checked.
	produce(t, l, "t", 0, build(t, spec{pid: -1}))
}

// TestProducerIDsInMemoryChecked refuses, in memory, the ids not handed
// out yet.
func TestProducerIDsInMemoryChecked(t *testing.T) {
	t.Parallel()
	l := openStrict(t, testConfig(t, ""))
	require.NoError(t, l.CreatePartitions("t", 1))
	_, err := tryProduce(l, "t", 0, build(t, spec{pid: 0, idem: true}))
	require.ErrorIs(t, err, ErrUnknownProducerID)
	_, _, err = l.InitProducerID()
	require.NoError(t, err)
	produce(t, l, "t", 0, build(t, spec{pid: 0, idem: true}))
	_, err = tryProduce(l, "t", 0, build(t, spec{pid: 1, idem: true}))
	require.ErrorIs(t, err, ErrUnknownProducerID)
}

// TestForgedProducerIDInLogs starts with a log that holds a batch with
// producer id MaxInt64-1 (written before ids were checked, or by hand):
// the block file wins, InitProducerId keeps handing out ids, and the
// stray id is reported once at Warn.
func TestForgedProducerIDInLogs(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	l, err := openAnyPID(testConfig(t, dir))
	require.NoError(t, err)
	require.NoError(t, l.CreatePartitions("t", 1))
	id, _, err := l.InitProducerID()
	require.NoError(t, err)
	require.Equal(t, int64(0), id)
	produce(t, l, "t", 0, build(t, spec{pid: math.MaxInt64 - 1, idem: true}))
	require.NoError(t, l.Close())

	cfg := testConfig(t, dir)
	logs, rec := newTestLogger(t)
	cfg.Logger = logs
	l = openStrict(t, cfg)
	for want := int64(producerIDBlock); want < producerIDBlock+3; want++ {
		id, _, err := l.InitProducerID()
		require.NoError(t, err)
		require.Equal(t, want, id)
	}
	warns := rec.find(slog.LevelWarn, "producer ids this broker never handed out")
	require.Len(t, warns, 1)
	require.Contains(t, warns[0], "largest_in_logs=9223372036854775806")
	_, err = tryProduce(l, "t", 0, build(t, spec{pid: math.MaxInt64 - 1, seq: 1, idem: true}))
	require.ErrorIs(t, err, ErrUnknownProducerID)
}
