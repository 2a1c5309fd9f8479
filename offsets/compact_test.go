package offsets

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/minibroker/minibroker/internal/atomicfile"
)

// hookFS is the real file system with an optional hook before each call:
// a hook that returns an error fails the call instead.
type hookFS struct {
	atomicfile.OS
	rename  func(oldpath, newpath string) error
	remove  func(name string) error
	syncDir func(dir string) error
	create  func(dir, pattern string) (atomicfile.File, error) // replaces CreateTemp
}

func (h *hookFS) CreateTemp(dir, pattern string) (atomicfile.File, error) {
	if h.create != nil {
		return h.create(dir, pattern)
	}
	return h.OS.CreateTemp(dir, pattern)
}

func (h *hookFS) Rename(oldpath, newpath string) error {
	if h.rename != nil {
		if err := h.rename(oldpath, newpath); err != nil {
			return err
		}
	}
	return h.OS.Rename(oldpath, newpath)
}

func (h *hookFS) Remove(name string) error {
	if h.remove != nil {
		if err := h.remove(name); err != nil {
			return err
		}
	}
	return h.OS.Remove(name)
}

func (h *hookFS) SyncDir(dir string) error {
	if h.syncDir != nil {
		if err := h.syncDir(dir); err != nil {
			return err
		}
	}
	return h.OS.SyncDir(dir)
}

// eventually polls cond until it holds or a generous deadline passes.
func eventually(t *testing.T, cond func() bool, what string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		runtime.Gosched()
	}
}

// waitFoldsDone waits until no background fold is running, so that a
// second store can read the directory without a fold removing a segment
// under it.
func waitFoldsDone(t *testing.T, s *Store) {
	t.Helper()
	eventually(t, func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return !s.compacting
	}, "the fold to finish")
}

// segmentNames returns the names of dir's journal segments.
func segmentNames(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	for _, n := range dirNames(t, dir) {
		if strings.HasPrefix(n, JournalPrefix) {
			out = append(out, n)
		}
	}
	return out
}

// commitMany commits offsets 1..n to partition p of group g, one by one,
// and returns the expected state.
func commitMany(t *testing.T, s *Store, groups, n int) map[string][]Entry {
	t.Helper()
	want := map[string][]Entry{}
	for i := 1; i <= n; i++ {
		for g := range groups {
			group := fmt.Sprintf("g%02d", g)
			require.NoError(t, s.Commit(group, []Entry{ent("orders", 0, int64(i))}))
			want[group] = []Entry{ent("orders", 0, int64(i))}
		}
	}
	return want
}

// TestCompactionFoldsJournal: once the journal outgrows CompactBytes, a
// background fold writes offsets.json and removes the folded segments,
// while commits go on; the files always replay to what memory holds.
func TestCompactionFoldsJournal(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var syncs atomic.Int64
	s, err := Open(Config{Dir: dir, CompactBytes: 256, ObserveSync: func(d time.Duration) {
		require.Positive(t, d)
		syncs.Add(1)
	}})
	require.NoError(t, err)
	want := commitMany(t, s, 4, 40)
	eventually(t, func() bool { return s.Stats().Compactions >= 3 }, "three compactions")
	waitFoldsDone(t, s)
	st := s.Stats()
	require.Equal(t, int64(160), st.Commits)
	require.Equal(t, int64(160), st.Appends, "serial commits: one record each")
	require.Equal(t, st.Appends, syncs.Load(), "ObserveSync sees every durable append")
	require.Zero(t, st.FailedFolds)

	// The snapshot alone is a state the store went through, and the
	// journal left on disk is small.
	snap, _, _, err := load(filepath.Join(dir, FileName))
	require.NoError(t, err)
	require.Len(t, snap, 4)
	require.Equal(t, want, reopen(t, dir))
	require.Equal(t, want, snapshot(s))

	require.NoError(t, s.Close())
	require.Equal(t, []string{FileName}, dirNames(t, dir), "Close folds the rest")
	require.Equal(t, want, reopen(t, dir))
}

// TestCompactionThresholdFollowsSnapshot: with a snapshot larger than
// CompactBytes, the journal must grow to the snapshot's size before a
// fold, so that rewriting the snapshot costs O(1) per journaled byte.
func TestCompactionThresholdFollowsSnapshot(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	big := table{}
	for p := range int32(500) {
		big.commit("stored", []Entry{ent("orders", p, 1)})
	}
	data := encode(big, nil)
	writeOffsets(t, dir, data)
	s := openInline(t, Config{Dir: dir, CompactBytes: 64})

	one := int64(len(rec(commitOf("g00", ent("orders", 0, 1)))))
	for i := int64(1); s.Stats().JournalBytes+one < int64(len(data)); i++ {
		require.NoError(t, s.Commit("g00", []Entry{ent("orders", 0, i)}))
		require.Zero(t, s.Stats().Compactions, "journal %d bytes, snapshot %d", s.Stats().JournalBytes, len(data))
	}
	require.NoError(t, s.Commit("g00", []Entry{ent("orders", 0, 1)}))
	require.NoError(t, s.Commit("g00", []Entry{ent("orders", 0, 2)}))
	require.Equal(t, int64(1), s.Stats().Compactions)
	require.Greater(t, s.Stats().SnapshotBytes, int64(len(data)))
}

// TestCompactionFailureKeepsJournal fails the snapshot rename of every
// fold: commits go on, the journal stays whole, folds are retried only
// after another threshold's worth of journal, and once the fault clears a
// fold succeeds.
func TestCompactionFailureKeepsJournal(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var failing atomic.Bool
	var attempts atomic.Int64
	fsys := &hookFS{rename: func(_, newpath string) error {
		if filepath.Base(newpath) == FileName && failing.Load() {
			attempts.Add(1)
			return errInjected
		}
		return nil
	}}
	logger, logs := newLogger()
	s := openInline(t, Config{Dir: dir, FS: fsys, CompactBytes: 200, Logger: logger})

	failing.Store(true)
	want := commitMany(t, s, 2, 30)
	st := s.Stats()
	require.Zero(t, st.Compactions)
	require.Positive(t, st.FailedFolds)
	require.Equal(t, attempts.Load(), st.FailedFolds)
	require.ErrorIs(t, st.LastFoldError, errInjected)
	require.Less(t, attempts.Load(), int64(10), "not retried on every commit")
	// The first failure is logged with the journal it leaves; the ones
	// that follow within LogInterval are only counted.
	require.Contains(t, logs.String(), `level=ERROR msg="offsets journal fold failed" err="offsets storage failure: rename `)
	require.Contains(t, logs.String(), "injected failure\" journal_bytes=")
	require.Regexp(t, `journal_bytes=\d+ segments=1\n`, logs.String())
	require.Equal(t, 1, strings.Count(logs.String(), "fold failed"), "one line per LogInterval")
	require.Equal(t, want, reopen(t, dir))
	require.Equal(t, want, snapshot(s))

	failing.Store(false)
	want = commitMany(t, s, 2, 30)
	require.Positive(t, s.Stats().Compactions)
	require.Equal(t, want, reopen(t, dir))
}

// TestCompactionSnapshotDirSyncFailureKeepsJournal: a snapshot whose
// rename may not be durable must not let the segments it holds go.
func TestCompactionSnapshotDirSyncFailureKeepsJournal(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var lastRename atomic.Value
	lastRename.Store("")
	var armed atomic.Bool
	fsys := &hookFS{
		rename: func(_, newpath string) error { lastRename.Store(filepath.Base(newpath)); return nil },
		syncDir: func(string) error {
			if armed.Load() && lastRename.Load() == FileName {
				return errInjected
			}
			return nil
		},
	}
	s, err := open(Config{Dir: dir, FS: fsys, CompactBytes: 100}, inline)
	require.NoError(t, err)
	armed.Store(true) // after Open wrote the first snapshot
	want := commitMany(t, s, 1, 10)
	st := s.Stats()
	require.Positive(t, st.FailedFolds)
	require.ErrorIs(t, st.LastFoldError, atomicfile.ErrDirSync)
	require.NotEmpty(t, segmentNames(t, dir), "the folded segments stay")
	require.Equal(t, want, reopen(t, dir))

	err = s.Close()
	require.ErrorIs(t, err, ErrStorage, "Close's fold fails the same way")
	require.NotEmpty(t, segmentNames(t, dir))
	require.Equal(t, want, reopen(t, dir), "nothing acknowledged is lost")
}

// TestCompactionRemoveFailure: a segment that cannot be removed after a
// durable snapshot stays and is replayed again, harmlessly; the next fold
// removes it.
func TestCompactionRemoveFailure(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var failing atomic.Bool
	failing.Store(true)
	fsys := &hookFS{remove: func(name string) error {
		if strings.HasPrefix(filepath.Base(name), JournalPrefix) && !strings.Contains(name, ".tmp-") && failing.Load() {
			return errInjected
		}
		return nil
	}}
	s, err := open(Config{Dir: dir, FS: fsys, CompactBytes: 100}, inline)
	require.NoError(t, err)
	want := commitMany(t, s, 1, 10)
	require.Positive(t, s.Stats().FailedFolds)
	require.Equal(t, want, reopen(t, dir))

	failing.Store(false)
	want = commitMany(t, s, 1, 20)
	require.NoError(t, s.Close())
	require.Equal(t, []string{FileName}, dirNames(t, dir))
	require.Equal(t, want, reopen(t, dir))
}

// TestCloseFoldsAJournalItDidNotWrite: a store that only replayed a
// journal an earlier run left (a crash, then a restart with no new commit)
// still folds it at Close: a cleanly stopped broker leaves offsets.json
// alone, holding everything.
func TestCloseFoldsAJournalItDidNotWrite(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeOffsets(t, dir, []byte(emptyFile))
	writeSegment(t, dir, 3, rec(commitOf("billing", ent("orders", 0, 6))))
	s := openStore(t, dir, nil)
	require.NoError(t, s.Close())
	require.Equal(t, []string{FileName}, dirNames(t, dir))
	require.Equal(t, map[string][]Entry{"billing": {ent("orders", 0, 6)}}, reopen(t, dir))
	st := s.Stats()
	require.Zero(t, st.JournalBytes)
	require.Zero(t, st.Segments)

	// A store that finds no journal leaves offsets.json as it is.
	before := readOffsets(t, dir)
	s2 := openStore(t, dir, nil)
	require.NoError(t, s2.Close())
	require.Equal(t, before, readOffsets(t, dir))
}

// TestTombstonesSurviveAFold: deletes folded into offsets.json stay
// deleted, whether the fold runs in the background or at Close, and
// replaying the folded segments again over the new snapshot (a crash
// before they were removed) changes nothing.
func TestTombstonesSurviveAFold(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := openInline(t, Config{Dir: dir, CompactBytes: -1})
	require.NoError(t, s.Commit("billing", []Entry{ent("orders", 0, 6), ent("orders", 1, 7)}))
	require.NoError(t, s.Commit("shipping", []Entry{ent("orders", 0, 3)}))
	require.NoError(t, s.Commit("audit", []Entry{ent("orders", 0, 1)}))
	require.NoError(t, s.DeleteOffsets("billing", []Key{{Topic: "orders", Partition: 0}})())
	require.NoError(t, s.Delete("shipping")())
	require.NoError(t, s.Commit("audit", []Entry{ent("orders", 1, 2)}))
	require.NoError(t, s.Delete("audit")())
	require.NoError(t, s.Commit("audit", []Entry{ent("orders", 2, 5)}))
	want := map[string][]Entry{"billing": {ent("orders", 1, 7)}, "audit": {ent("orders", 2, 5)}}
	require.Equal(t, want, snapshot(s))

	// Keep a copy of the journal, as a crash between the snapshot's
	// rename and the segments' removal would.
	journal := must(os.ReadFile(segmentPath(dir, 1)))
	s.sealAsWriter()
	s.compact()
	require.Equal(t, []string{FileName}, dirNames(t, dir), "the fold removed the segment")
	require.Equal(t, want, reopen(t, dir))
	snap, _, _, err := load(filepath.Join(dir, FileName))
	require.NoError(t, err)
	require.Equal(t, []Entry{ent("orders", 1, 7)}, snap.sorted("billing"))
	require.Nil(t, snap.sorted("shipping"))

	require.NoError(t, s.Close())
	writeSegment(t, dir, 1, journal)
	require.Equal(t, want, reopen(t, dir), "replaying the folded journal again changes nothing")
}

// TestSealIgnoresCloseFailure: closing a sealed segment is not part of any
// commit and every record in it is durable already.
func TestSealIgnoresCloseFailure(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	fsys := newFaultFS(stepClose)
	s := openStore(t, dir, fsys)
	require.NoError(t, s.Commit("billing", []Entry{ent("orders", 0, 6)}))
	fsys.arm()
	sealActive(t, s)
	require.NoError(t, s.Commit("billing", []Entry{ent("orders", 0, 7)}))
	fsys.disarm()
	require.Equal(t, []string{JournalPrefix + "1", JournalPrefix + "2"}, segmentNames(t, dir))
	require.Equal(t, map[string][]Entry{"billing": {ent("orders", 0, 7)}}, reopen(t, dir))
}

// noTruncateFile is a segment file that cannot take a failed write back.
type noTruncateFile struct {
	f      *os.File
	failOn *atomic.Bool
}

func (n *noTruncateFile) Write(p []byte) (int, error) {
	if n.failOn.Load() {
		k, _ := n.f.Write(p[:len(p)/2])
		return k, errInjected
	}
	return n.f.Write(p)
}
func (n *noTruncateFile) Name() string { return n.f.Name() }
func (n *noTruncateFile) Sync() error  { return n.f.Sync() }
func (n *noTruncateFile) Close() error { return n.f.Close() }

// TestFailedWriteThatCannotBeUndoneStopsCommits: if a failed write cannot
// be cut off the journal, the files may hold a commit that memory does
// not, so the store refuses every later commit instead of letting the two
// drift further apart; Close folds memory, and after that the files hold
// exactly the acknowledged commits again.
func TestFailedWriteThatCannotBeUndoneStopsCommits(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var fail atomic.Bool
	fsys := &hookFS{create: func(dir, pattern string) (atomicfile.File, error) {
		f, err := os.CreateTemp(dir, pattern)
		if err != nil {
			return nil, err
		}
		if strings.HasPrefix(pattern, JournalPrefix) {
			return &noTruncateFile{f: f, failOn: &fail}, nil
		}
		return f, nil
	}}
	s, err := Open(Config{Dir: dir, FS: fsys})
	require.NoError(t, err)
	require.NoError(t, s.Commit("billing", []Entry{ent("orders", 0, 6)}))

	fail.Store(true)
	require.ErrorIs(t, s.Commit("billing", []Entry{ent("orders", 0, 7)}), errInjected)
	fail.Store(false)
	err = s.Commit("billing", []Entry{ent("orders", 0, 8)})
	require.ErrorIs(t, err, ErrStorage)
	require.ErrorContains(t, err, "holds a failed write")
	require.Equal(t, []Entry{ent("orders", 0, 6)}, s.Committed("billing"))

	require.NoError(t, s.Close())
	require.Equal(t, []string{FileName}, dirNames(t, dir))
	require.Equal(t, map[string][]Entry{"billing": {ent("orders", 0, 6)}}, reopen(t, dir))
}

// TestCommitsDuringBackgroundCompaction runs concurrent committers while
// small thresholds make folds run back to back: every acknowledged commit
// is in memory and on disk, and the journal never grows without bound.
func TestCommitsDuringBackgroundCompaction(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s, err := Open(Config{Dir: dir, CompactBytes: 512})
	require.NoError(t, err)
	const workers, rounds = 8, 60
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for r := 1; r <= rounds; r++ {
				require.NoError(t, s.Commit(fmt.Sprintf("g%d", w), []Entry{ent("orders", int32(r%3), int64(r))}))
			}
		})
	}
	wg.Wait()
	want := map[string][]Entry{}
	for w := range workers {
		want[fmt.Sprintf("g%d", w)] = []Entry{ent("orders", 0, rounds), ent("orders", 1, rounds-2), ent("orders", 2, rounds-1)}
	}
	require.Equal(t, want, snapshot(s))
	waitFoldsDone(t, s)
	require.Equal(t, want, reopen(t, dir))
	require.Positive(t, s.Stats().Compactions)
	require.NoError(t, s.Close())
	require.Equal(t, want, reopen(t, dir))
}
