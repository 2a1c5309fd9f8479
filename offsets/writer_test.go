package offsets

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// commitSteps are the steps of a commit that fail before anything of it
// is durable. A commit appends one record to the open journal segment
// (write, fsync); the commit after a segment was sealed first opens a new
// one (create, rename). Closing a segment is not part of any commit: see
// TestSealIgnoresCloseFailure.
var commitSteps = []struct {
	step         step
	opensSegment bool
}{
	{stepCreate, true}, {stepWrite, false}, {stepSync, false}, {stepRename, true},
}

func TestCommitStorageFailure(t *testing.T) {
	t.Parallel()
	old := []Entry{ent("orders", 0, 6)}
	for _, tc := range commitSteps {
		st := tc.step
		t.Run(string(st), func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			fsys := newFaultFS(st)
			s := openStore(t, dir, fsys)
			require.NoError(t, s.Commit("billing", old))
			if tc.opensSegment {
				sealActive(t, s)
			}
			before := readOffsets(t, dir)
			namesBefore := dirNames(t, dir)

			fsys.arm()
			err := s.Commit("billing", []Entry{ent("orders", 0, 7), ent("orders", 1, 3)})
			require.ErrorIs(t, err, ErrStorage)
			require.ErrorIs(t, err, errInjected)
			require.ErrorContains(t, err, stepMessage(st))
			require.ErrorContains(t, err, dir)
			err = s.Commit("shipping", []Entry{ent("orders", 0, 1)})
			require.ErrorIs(t, err, ErrStorage, "the fault stays until cleared")

			require.Equal(t, old, s.Committed("billing"))
			got, ok := s.Lookup("billing", "orders", 0)
			require.True(t, ok)
			require.Equal(t, int64(6), got.Offset)
			_, ok = s.Lookup("billing", "orders", 1)
			require.False(t, ok)
			require.Equal(t, []string{"billing"}, s.Groups())
			require.Equal(t, string(before), string(readOffsets(t, dir)), "the snapshot is untouched")
			require.Equal(t, map[string][]Entry{"billing": old}, reopen(t, dir), "the files still hold the old values only")
			require.Equal(t, namesBefore, dirNames(t, dir), "no temp file or new segment is left behind")

			fsys.disarm()
			require.NoError(t, s.Commit("billing", []Entry{ent("orders", 2, 9)}))
			require.NoError(t, s.Commit("shipping", []Entry{ent("orders", 0, 1)}))
			want := map[string][]Entry{
				"billing":  {ent("orders", 0, 6), ent("orders", 2, 9)},
				"shipping": {ent("orders", 0, 1)},
			}
			require.Equal(t, want, snapshot(s))
			require.Equal(t, want, reopen(t, dir), "the files hold old + new")
		})
	}
}

// TestCommitDirectorySyncFailure fails the directory fsync that makes a
// new journal segment's name durable. It comes before any record goes into
// the segment, so the commit is reported failed and neither the files nor
// memory hold it; once the fault clears the next commit succeeds. (A
// failed directory fsync after a snapshot rename is covered by
// TestCompactionSnapshotDirSyncFailureKeepsJournal.)
func TestCommitDirectorySyncFailure(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	fsys := newFaultFS(stepSyncDir)
	s := openStore(t, dir, fsys)
	require.NoError(t, s.Commit("billing", []Entry{ent("orders", 0, 6)}))
	sealActive(t, s)
	namesBefore := dirNames(t, dir)

	fsys.arm()
	err := s.Commit("billing", []Entry{ent("orders", 0, 7)})
	require.ErrorIs(t, err, ErrStorage)
	require.ErrorIs(t, err, errInjected)
	require.ErrorContains(t, err, stepMessage(stepSyncDir))
	require.Equal(t, namesBefore, dirNames(t, dir), "the new, empty segment is removed")
	// The files do not hold 7, so memory does not either: they never disagree.
	require.Equal(t, snapshot(s), reopen(t, dir))
	e, ok := s.Lookup("billing", "orders", 0)
	require.True(t, ok)
	require.Equal(t, int64(6), e.Offset)

	fsys.disarm()
	require.NoError(t, s.Commit("shipping", []Entry{ent("orders", 0, 1)}))
	require.Equal(t, snapshot(s), reopen(t, dir))
	require.Equal(t, []Entry{ent("orders", 0, 1)}, s.Committed("shipping"))
}
func TestCommitUnwritableDirectory(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		// lock makes dir unwritable for the store; unlock undoes it.
		lock, unlock func(t *testing.T, dir string, fsys *faultFS)
	}{
		{
			name: "chmod 0500",
			lock: func(t *testing.T, dir string, _ *faultFS) {
				if os.Geteuid() == 0 {
					t.Skip("root ignores directory permissions; the injected case covers this")
				}
				require.NoError(t, os.Chmod(dir, 0o500))
				t.Cleanup(func() { _ = os.Chmod(dir, 0o700) })
			},
			unlock: func(t *testing.T, dir string, _ *faultFS) { require.NoError(t, os.Chmod(dir, 0o700)) },
		},
		{
			name:   "injected permission error",
			lock:   func(_ *testing.T, _ string, fsys *faultFS) { fsys.arm() },
			unlock: func(_ *testing.T, _ string, fsys *faultFS) { fsys.disarm() },
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			fsys := newFaultFS(stepCreate)
			fsys.err = &fs.PathError{Op: "open", Path: filepath.Join(dir, FileName+".tmp-1"), Err: fs.ErrPermission}
			s := openStore(t, dir, fsys)
			require.NoError(t, s.Commit("billing", []Entry{ent("orders", 0, 6)}))
			// Appending to an open segment needs no directory write; the
			// directory matters when a commit must open a new segment.
			sealActive(t, s)
			before := readOffsets(t, dir)

			tc.lock(t, dir, fsys)
			err := s.Commit("billing", []Entry{ent("orders", 0, 7)})
			require.ErrorIs(t, err, ErrStorage)
			require.ErrorIs(t, err, fs.ErrPermission)
			require.ErrorContains(t, err, dir)
			require.Equal(t, []Entry{ent("orders", 0, 6)}, s.Committed("billing"))
			require.Equal(t, before, readOffsets(t, dir))

			tc.unlock(t, dir, fsys)
			require.NoError(t, s.Commit("billing", []Entry{ent("orders", 0, 8)}))
			require.Equal(t, map[string][]Entry{"billing": {ent("orders", 0, 8)}}, reopen(t, dir))
		})
	}
}

// TestGroupCommitConcurrent commits from 64 goroutines at once, half to a
// shared group and half to groups of their own, several times each. Every
// commit is acknowledged and kept, and the commits share writes.
func TestGroupCommitConcurrent(t *testing.T) {
	t.Parallel()
	const goroutines, rounds = 64, 4
	dir := t.TempDir()
	rec := &recordFS{}
	s, err := Open(Config{Dir: dir, FS: rec})
	require.NoError(t, err)
	writesBefore := rec.count()

	// key returns the group and partition goroutine i commits to.
	key := func(i int) (string, int32) {
		if i%2 == 0 {
			return "shared", int32(i)
		}
		return fmt.Sprintf("own-%02d", i), 0
	}
	start := make(chan struct{})
	errs := make(chan error, goroutines*rounds)
	var wg sync.WaitGroup
	for i := range goroutines {
		wg.Go(func() {
			<-start
			group, partition := key(i)
			for r := range rounds {
				errs <- s.Commit(group, []Entry{ent("orders", partition, int64(100*r+i))})
			}
		})
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	writes := rec.count() - writesBefore // before Close folds the journal
	require.NoError(t, s.Close())

	// Each goroutine's last commit is the value that must survive; i grows
	// with the partition, so the shared group's entries come out sorted.
	want := map[string][]Entry{}
	for i := range goroutines {
		group, partition := key(i)
		want[group] = append(want[group], ent("orders", partition, int64(100*(rounds-1)+i)))
	}
	require.Len(t, want, goroutines/2+1)
	require.Equal(t, want, snapshot(s), "every acknowledged value is in memory")
	require.Equal(t, want, reopen(t, dir), "and in the file")

	require.GreaterOrEqual(t, writes, 1)
	require.LessOrEqual(t, writes, goroutines*rounds, "never more writes than commits")
	t.Logf("%d commits took %d writes", goroutines*rounds, writes)
}

// TestGroupCommitBatchesQueuedCommits holds the first write in CreateTemp
// while 10 more commits are enqueued: once it finishes, the 10 share
// exactly one further write.
func TestGroupCommitBatchesQueuedCommits(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	rec := &recordFS{}
	gate := newGateFS(rec)
	s := openStore(t, dir, gate)
	writesBefore := rec.count()
	gate.arm(t)

	first := make(chan error, 1)
	go func() { first <- s.Commit("billing", []Entry{ent("orders", 0, 6)}) }()
	waitFor(t, gate.entered, "the first write to start")

	waits := make([]func() error, 10)
	for i := range waits {
		waits[i] = s.Enqueue("billing", []Entry{ent("orders", int32(i+1), int64(10+i))})
	}
	errs := make(chan error, len(waits))
	for _, wait := range waits {
		go func() { errs <- wait() }()
	}
	gate.open()

	require.NoError(t, waitFor(t, first, "the first commit"))
	for range waits {
		require.NoError(t, waitFor(t, errs, "a batched commit"))
	}
	require.Equal(t, writesBefore+2, rec.count(), "the first write and exactly one more")

	// What the disk held after each write: the first journal record,
	// then the first plus the one record carrying the 10.
	states := rec.states(t, writesBefore)
	require.Equal(t, []Entry{ent("orders", 0, 6)}, states[0].sorted("billing"))
	want := []Entry{ent("orders", 0, 6)}
	for i := range waits {
		want = append(want, ent("orders", int32(i+1), int64(10+i)))
	}
	require.Equal(t, want, states[1].sorted("billing"))
	require.Equal(t, want, s.Committed("billing"))
}

// TestCommitOrderFollowsEnqueue enqueues A then B on one partition: they
// become durable in that order whichever wait runs first, and B stays.
func TestCommitOrderFollowsEnqueue(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		run  func(t *testing.T, s *Store, gate *gateFS)
		// want is the partition's offset on disk after each write, in order.
		want []int64
	}{
		{
			name: "B waited first",
			run: func(t *testing.T, s *Store, _ *gateFS) {
				waitA := s.Enqueue("billing", []Entry{ent("orders", 0, 1)})
				waitB := s.Enqueue("billing", []Entry{ent("orders", 0, 2)})
				require.NoError(t, waitB())
				require.NoError(t, waitA())
			},
			want: []int64{2},
		},
		{
			name: "A in flight when B is enqueued",
			run: func(t *testing.T, s *Store, gate *gateFS) {
				gate.arm(t)
				waitA := s.Enqueue("billing", []Entry{ent("orders", 0, 1)})
				errA := make(chan error, 1)
				go func() { errA <- waitA() }()
				waitFor(t, gate.entered, "A's write to start")
				waitB := s.Enqueue("billing", []Entry{ent("orders", 0, 2)})
				errB := make(chan error, 1)
				go func() { errB <- waitB() }()
				gate.open()
				require.NoError(t, waitFor(t, errB, "B"))
				require.NoError(t, waitFor(t, errA, "A"))
			},
			want: []int64{1, 2},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			rec := &recordFS{}
			gate := newGateFS(rec)
			s := openStore(t, dir, gate)
			writesBefore := rec.count()

			tc.run(t, s, gate)

			var got []int64
			for _, tb := range rec.states(t, writesBefore) {
				e, ok := tb.lookup("billing", Key{Topic: "orders", Partition: 0})
				require.True(t, ok)
				got = append(got, e.Offset)
			}
			require.Equal(t, tc.want, got)
			require.Equal(t, []Entry{ent("orders", 0, 2)}, s.Committed("billing"))
			require.Equal(t, map[string][]Entry{"billing": {ent("orders", 0, 2)}}, reopen(t, dir))
		})
	}
}

// TestFailedBatchFailsEveryCommit: commits that share a failed write all
// get the error, and none of them is applied.
func TestFailedBatchFailsEveryCommit(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	fsys := newFaultFS(stepRename)
	s := openStore(t, dir, fsys)
	waits := []func() error{
		s.Enqueue("billing", []Entry{ent("orders", 0, 1)}),
		s.Enqueue("shipping", []Entry{ent("orders", 0, 2)}),
		s.Enqueue("billing", []Entry{ent("orders", 1, 3)}),
	}
	fsys.arm()
	for i, wait := range waits {
		require.ErrorIs(t, wait(), ErrStorage, "commit %d", i)
	}
	require.Empty(t, s.Groups())
	require.Equal(t, emptyFile, string(readOffsets(t, dir)))
}

// TestRefusedCommitsAreLoggedAndCounted: every commit refused for a
// storage failure (KAFKA_STORAGE_ERROR on the wire) counts in Stats; the
// log gets one line with the error, and the refusals that follow within
// LogInterval are only counted, for the next line to report.
func TestRefusedCommitsAreLoggedAndCounted(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	fsys := newFaultFS(stepSync)
	logger, logs := newLogger()
	s, err := Open(Config{Dir: dir, FS: fsys, Logger: logger})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	require.NoError(t, s.Commit("billing", []Entry{ent("orders", 0, 6)}))

	fsys.arm()
	for i := range 3 {
		require.ErrorIs(t, s.Commit("billing", []Entry{ent("orders", 0, int64(7+i))}), ErrStorage)
	}
	require.ErrorIs(t, s.Delete("billing")(), ErrStorage)
	fsys.disarm()

	st := s.Stats()
	require.Equal(t, int64(4), st.RefusedCommits)
	require.Equal(t, int64(1), st.Commits)
	require.Zero(t, st.Deletes)
	require.Equal(t, 1, strings.Count(logs.String(), "commits refused"), "one line per LogInterval: %s", logs)
	require.Contains(t, logs.String(), `level=ERROR msg="commits refused: offsets storage failure" err="offsets storage failure: fsync `)
	require.Contains(t, logs.String(), "injected failure\" commits=1\n")
}
