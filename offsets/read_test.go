package offsets

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestReadBesideARunningStore: Read sees what an open store acknowledged,
// journal included, skips a torn last record without cutting it, and
// changes no file.
func TestReadBesideARunningStore(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s, err := Open(Config{Dir: dir, CompactBytes: -1})
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	require.NoError(t, s.Commit("app", []Entry{{Topic: "orders", Partition: 1, Offset: 6, LeaderEpoch: NoLeaderEpoch}}))
	require.NoError(t, s.Commit("app", []Entry{{Topic: "orders", Partition: 0, Offset: 3, LeaderEpoch: NoLeaderEpoch}}))
	require.NoError(t, s.Commit("audit", []Entry{{Topic: "payments", Partition: 0, Offset: 9, LeaderEpoch: NoLeaderEpoch}}))
	require.NoError(t, s.Delete("audit")())

	segs, err := filepath.Glob(filepath.Join(dir, "offsets.journal.*"))
	require.NoError(t, err)
	require.Len(t, segs, 1, "the commits are in the journal, not yet in offsets.json")
	// A record torn at the first sector boundary, over the zeros filled
	// ahead of the records.
	end := s.Stats().JournalBytes
	torn := rec(commitOf("app", Entry{Topic: "orders", Offset: 9, Metadata: strings.Repeat("m", 600), LeaderEpoch: NoLeaderEpoch}))
	f, err := os.OpenFile(segs[0], os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteAt(torn[:sectorBytes-end], end)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	before, err := os.ReadFile(segs[0])
	require.NoError(t, err)

	got, err := Read(dir)
	require.NoError(t, err)
	require.Equal(t, map[string][]Entry{"app": {
		{Topic: "orders", Partition: 0, Offset: 3, LeaderEpoch: NoLeaderEpoch},
		{Topic: "orders", Partition: 1, Offset: 6, LeaderEpoch: NoLeaderEpoch},
	}}, got)
	after, err := os.ReadFile(segs[0])
	require.NoError(t, err)
	require.Equal(t, before, after, "Read cuts nothing")
}

func TestReadRefusesCorruptFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, FileName), []byte(`{"version":1,"groups":{"g":[{"topic":"t","partition":0,"offset":1},{"topic":"t","partition":0,"offset":2}]}}`), 0o644))
	_, err := Read(dir)
	require.ErrorIs(t, err, ErrCorrupt)
	got, err := Read(t.TempDir())
	require.NoError(t, err)
	require.Empty(t, got, "an empty data dir holds no offsets")
}
