package txn

import (
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/minibroker/minibroker/offsets"
	"github.com/minibroker/minibroker/records"
)

func TestJournalRoundTripAndTornTail(t *testing.T) {
	dir := t.TempDir()
	j, es, err := openJournal(dir, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	require.Empty(t, es)
	want := []entry{
		{Kind: kindInit, ID: "a", PID: 3, Epoch: 0, LastEpoch: -1, TimeoutMs: 60000},
		{Kind: kindBegin, ID: "a", PID: 3},
		{Kind: kindEnd, ID: "a", PID: 3, Commit: true, Partitions: []records.TopicPartition{{Topic: "t", Partition: 1}},
			Offsets: map[string][]offsets.Entry{"g": {{Topic: "in", Partition: 0, Offset: 9, LeaderEpoch: -1}}}},
	}
	require.NoError(t, j.append(want[0]))
	require.NoError(t, j.append(want[1:]...))
	require.NoError(t, j.close())
	require.ErrorIs(t, j.append(want[0]), ErrClosed)

	path := filepath.Join(dir, JournalFile)
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	got, n := decodeJournal(data)
	require.Equal(t, want, got)
	require.Equal(t, int64(len(data)), n)

	// A torn last record is cut at Open; what precedes it stays.
	require.NoError(t, os.WriteFile(path, data[:len(data)-3], 0o644))
	j, es, err = openJournal(dir, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	require.Equal(t, want[:2], es)
	require.NoError(t, j.close())
	st, err := os.Stat(path)
	require.NoError(t, err)
	_, n = decodeJournal(data)
	require.Less(t, st.Size(), n)
}

func TestJournalRewrite(t *testing.T) {
	dir := t.TempDir()
	j, _, err := openJournal(dir, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	for range 3 {
		require.NoError(t, j.append(entry{Kind: kindInit, ID: "a", PID: 1}))
	}
	require.NoError(t, j.rewrite([]entry{{Kind: kindInit, ID: "a", PID: 1, Epoch: 2}}))
	require.NoError(t, j.append(entry{Kind: kindBegin, ID: "a", PID: 1, Epoch: 2}))
	require.False(t, j.large())
	require.NoError(t, j.close())
	_, es, err := openJournal(dir, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	require.Equal(t, []entry{{Kind: kindInit, ID: "a", PID: 1, Epoch: 2}, {Kind: kindBegin, ID: "a", PID: 1, Epoch: 2}}, es)
}

// FuzzJournalRecovery: whatever bytes the file holds, replay returns the
// sound records of a prefix and never reads past the data.
func FuzzJournalRecovery(f *testing.F) {
	var seed []byte
	for _, e := range []entry{{Kind: kindInit, ID: "a", PID: 1}, {Kind: kindEnd, ID: "a", PID: 1, Commit: true,
		Partitions: []records.TopicPartition{{Topic: "t"}}}} {
		seed = e.encode(seed)
	}
	f.Add(seed)
	f.Add(seed[:len(seed)-1])
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		es, n := decodeJournal(data)
		require.LessOrEqual(t, n, int64(len(data)))
		var again []byte
		for i := range es {
			require.True(t, es[i].valid())
			again = es[i].encode(again)
		}
		got, m := decodeJournal(again)
		require.Equal(t, es, got, "what replays re-encodes to the same records")
		require.Equal(t, int64(len(again)), m)
	})
}

// TestJournalGroupCommit: writers appending at once all get their records
// durable, in one file, sharing syncs; a record written without waiting
// is covered by the next sync.
func TestJournalGroupCommit(t *testing.T) {
	dir := t.TempDir()
	j, _, err := openJournal(dir, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	require.NoError(t, j.write(entry{Kind: kindBegin, ID: "w", PID: 1}))
	require.Equal(t, int64(0), j.syncCount())
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := range 20 {
				require.NoError(t, j.append(entry{Kind: kindInit, ID: "a", PID: int64(w*100 + i)}))
			}
		})
	}
	wg.Wait()
	require.LessOrEqual(t, j.syncCount(), int64(160))
	j.mu.Lock()
	require.Equal(t, j.size, j.durable, "every append waited for a sync that covered it")
	j.mu.Unlock()
	require.NoError(t, j.close())
	_, es, err := openJournal(dir, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	require.Len(t, es, 161)
	require.Equal(t, entry{Kind: kindBegin, ID: "w", PID: 1}, es[0])
	seen := map[int64]bool{}
	for _, e := range es[1:] {
		seen[e.PID] = true
	}
	require.Len(t, seen, 160)
}
