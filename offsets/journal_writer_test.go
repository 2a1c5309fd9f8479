package offsets

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/minibroker/minibroker/internal/atomicfile"
)

// TestJournalWriterAppendsAndSeals: the writer alone opens segment 7 on
// its first append, appends each record at the end (the file holds
// exactly the two records, which replay in order), reports the sizes and
// that it opened a segment only once, and seal hands segment 7 over with
// its size; the next append opens segment 8.
func TestJournalWriterAppendsAndSeals(t *testing.T) {
	dir := t.TempDir()
	w := &journalWriter{dir: dir, fs: atomicfile.OS{}, nextSeq: 7}
	first := []*op{{kind: opCommit, group: "g", entries: []Entry{{Topic: "t", Partition: 1, Offset: 5, LeaderEpoch: -1}}}}
	second := []*op{{kind: opDelete, group: "g"}}
	n1, opened, err := w.append(first)
	require.NoError(t, err)
	require.True(t, opened)
	require.Equal(t, len(appendRecord(nil, first)), n1)
	n2, opened, err := w.append(second)
	require.NoError(t, err)
	require.False(t, opened)

	seg, ok := w.seal()
	require.True(t, ok)
	require.Equal(t, segment{seq: 7, path: segmentPath(dir, 7), size: int64(n1 + n2)}, seg)
	data, err := os.ReadFile(filepath.Join(dir, JournalPrefix+"7"))
	require.NoError(t, err)
	require.Equal(t, append(appendRecord(nil, first), appendRecord(nil, second)...), data)
	_, ok = w.seal()
	require.False(t, ok, "nothing to seal twice")

	_, opened, err = w.append(second)
	require.NoError(t, err)
	require.True(t, opened)
	require.Equal(t, segmentPath(dir, 8), w.activeSeg.path)
}

// TestJournalWriterPreallocates: with preallocBytes, the writer fills the
// segment with zeros a chunk past each record that does not fit in the
// zeros already there, and writes records over them: the file is the
// records, then zeros, and its size moves only when a record reaches past
// them. Replay reads it back whole, with nothing to cut, as Open would
// after a crash.
func TestJournalWriterPreallocates(t *testing.T) {
	dir := t.TempDir()
	const chunk = 4096
	w := &journalWriter{dir: dir, fs: atomicfile.OS{}, nextSeq: 1, preallocBytes: chunk}
	path := segmentPath(dir, 1)
	big := Entry{Topic: "t", Offset: 5, Metadata: string(make([]byte, 3000)), LeaderEpoch: -1}
	var records []byte
	sizes := []int64{}
	for i := range 3 {
		big.Offset = int64(i)
		ops := []*op{{kind: opCommit, group: "g", entries: []Entry{big}}}
		_, _, err := w.append(ops)
		require.NoError(t, err)
		records = appendRecord(records, ops)
		fi, err := os.Stat(path)
		require.NoError(t, err)
		sizes = append(sizes, fi.Size())
	}
	r1 := int64(len(records) / 3) // the three records are the same size
	require.Equal(t, []int64{r1 + chunk, r1 + chunk, 3*r1 + chunk}, sizes,
		"the second record fits in the first chunk; the third reaches past it")

	data, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, records, data[:len(records)])
	require.True(t, allZero(data[len(records):]), "zeros after the records")
	var got []int64
	valid, tail, err := replaySegment(path, true, func(o *op) { got = append(got, o.entries[0].Offset) })
	require.NoError(t, err)
	require.Nil(t, tail, "nothing to cut")
	require.Equal(t, int64(len(records)), valid)
	require.Equal(t, []int64{0, 1, 2}, got)
}

// TestStorePreallocatesItsJournal: a store on the real file system
// preallocates its journal (a chunk of zeros past the records, as much as
// CompactBytes within 64 KiB and 1 MiB), and the files as a killed
// broker leaves them open with every acknowledged commit and nothing cut.
func TestStorePreallocatesItsJournal(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s, err := Open(Config{Dir: dir, CompactBytes: -1})
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	for i := range 3 {
		require.NoError(t, s.Commit("app", []Entry{{Topic: "orders", Partition: int32(i), Offset: int64(10 + i), LeaderEpoch: NoLeaderEpoch}}))
	}
	journal := s.Stats().JournalBytes
	fi, err := os.Stat(segmentPath(dir, 1))
	require.NoError(t, err)
	first := int64(len(rec(commitOf("app", Entry{Topic: "orders", Offset: 10, LeaderEpoch: NoLeaderEpoch}))))
	require.Equal(t, first+maxPreallocBytes, fi.Size(), "a chunk of zeros past the first record")

	// The files as they are now, without Close: what kill -9 leaves.
	copied := t.TempDir()
	for _, name := range []string{FileName, JournalPrefix + "1"} {
		require.NoError(t, os.WriteFile(filepath.Join(copied, name), must(os.ReadFile(filepath.Join(dir, name))), 0o644))
	}
	logger, logs := newLogger()
	r, err := Open(Config{Dir: copied, Logger: logger})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, r.Close()) })
	require.Equal(t, map[string][]Entry{"app": {
		{Topic: "orders", Partition: 0, Offset: 10, LeaderEpoch: NoLeaderEpoch},
		{Topic: "orders", Partition: 1, Offset: 11, LeaderEpoch: NoLeaderEpoch},
		{Topic: "orders", Partition: 2, Offset: 12, LeaderEpoch: NoLeaderEpoch},
	}}, snapshot(r))
	require.Equal(t, journal, r.Stats().JournalBytes)
	require.Zero(t, r.Stats().CutTails)
	require.NotContains(t, logs.String(), "level=WARN")
}

func TestPreallocFor(t *testing.T) {
	for compact, want := range map[int64]int64{
		-1:                  maxPreallocBytes,
		1:                   minPreallocBytes,
		100 << 10:           100 << 10,
		DefaultCompactBytes: maxPreallocBytes,
	} {
		require.Equal(t, want, preallocFor(compact), "CompactBytes %d", compact)
	}
}
