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
