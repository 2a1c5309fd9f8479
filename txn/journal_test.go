package txn

import (
	"bytes"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
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
	syncs, _ := j.counts()
	require.Equal(t, int64(0), syncs)
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := range 20 {
				require.NoError(t, j.append(entry{Kind: kindInit, ID: "a", PID: int64(w*100 + i)}))
			}
		})
	}
	wg.Wait()
	syncs, _ = j.counts()
	require.LessOrEqual(t, syncs, int64(160))
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

// TestJournalPreallocates: the file runs a chunk of zeros ahead of its
// records while the journal is open; a kill leaves them, and Open reads
// them as space, keeping every record and logging nothing; a record torn
// over them is cut and logged; a clean close leaves the records alone.
func TestJournalPreallocates(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, JournalFile)
	j, _, err := openJournal(dir, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	want := []entry{{Kind: kindInit, ID: "a", PID: 3, LastEpoch: -1}, {Kind: kindBegin, ID: "a", PID: 3}}
	var records []byte
	for i := range want {
		require.NoError(t, j.append(want[i]))
		records = want[i].encode(records)
	}
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Len(t, data, len(want[0].encode(nil))+preallocBytes, "the first record's chunk")
	require.Equal(t, records, data[:len(records)])
	require.Equal(t, make([]byte, len(data)-len(records)), data[len(records):], "zeros after the records")

	// The file as a kill leaves it.
	killed := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(killed, JournalFile), data, 0o644))
	logs := &bytes.Buffer{}
	k, es, err := openJournal(killed, slog.New(slog.NewTextHandler(logs, nil)))
	require.NoError(t, err)
	require.Equal(t, want, es)
	require.Empty(t, logs.String(), "zeros are not a torn tail")
	require.NoError(t, k.append(entry{Kind: kindBegin, ID: "b", PID: 4}))
	require.NoError(t, k.close())
	_, es, err = openJournal(killed, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	require.Equal(t, append(want, entry{Kind: kindBegin, ID: "b", PID: 4}), es, "a record written over the zeros follows the others")

	// The last record torn over the zeros: its last 5 bytes never written.
	torn := slices.Clone(data)
	clear(torn[len(records)-5 : len(records)])
	require.NoError(t, os.WriteFile(filepath.Join(killed, JournalFile), torn, 0o644))
	logs.Reset()
	k, es, err = openJournal(killed, slog.New(slog.NewTextHandler(logs, nil)))
	require.NoError(t, err)
	require.Equal(t, want[:1], es)
	first := len(want[0].encode(nil))
	require.Contains(t, logs.String(), fmt.Sprintf(`msg="torn tail cut off the transaction log" file=%s from=%d to=%d`, filepath.Join(killed, JournalFile), first, len(records)-5))
	require.NoError(t, k.close())
	st, err := os.Stat(filepath.Join(killed, JournalFile))
	require.NoError(t, err)
	require.Equal(t, int64(first), st.Size(), "cut to the sound record")

	require.NoError(t, j.close())
	data, err = os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, records, data, "a clean close leaves only the records")
}
