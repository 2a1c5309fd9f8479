package offsets

import (
	"slices"
	"testing"
	"time"

	"github.com/minibroker/minibroker/internal/atomicfile"
	"github.com/stretchr/testify/require"
)

// writeSteps are the steps of a write that fail before the target changes.
var writeSteps = []step{stepCreate, stepWrite, stepSync, stepClose, stepRename}

// stepMessage is the part of atomicfile.Write's error naming each step.
func stepMessage(s step) string {
	return map[step]string{
		stepCreate:  "create temp file for",
		stepWrite:   "write ",
		stepSync:    "fsync ",
		stepClose:   "close ",
		stepRename:  "rename ",
		stepSyncDir: "directory fsync failed",
	}[s]
}
func TestCommitThenReopen(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s, err := Open(Config{Dir: dir})
	require.NoError(t, err)
	require.NoError(t, s.Commit("billing", []Entry{
		ent("orders", 1, 17),
		{Topic: "orders", Partition: 0, Offset: 6, Metadata: "consumer-1 at 2024-05-01", LeaderEpoch: 4},
	}))
	require.NoError(t, s.Commit("analytics", []Entry{{Topic: "clicks", Partition: 3, Offset: 0, LeaderEpoch: 0}}))
	require.NoError(t, s.Commit("billing", []Entry{ent("orders", 1, 18)}))
	require.NoError(t, s.Close())

	want := map[string][]Entry{
		"analytics": {{Topic: "clicks", Partition: 3, Offset: 0, LeaderEpoch: 0}},
		"billing": {
			{Topic: "orders", Partition: 0, Offset: 6, Metadata: "consumer-1 at 2024-05-01", LeaderEpoch: 4},
			ent("orders", 1, 18),
		},
	}
	require.Equal(t, want, snapshot(s), "memory after the commits")
	require.Equal(t, want, reopen(t, dir), "a restarted store")
}

// TestResetSentinelsAreStored: the offsets -1 and -2 a client commits when
// it resets (kafkajs does) are stored as given, beside an ordinary offset:
// read back at once, from the journal while the store runs, and from
// offsets.json once Close has folded the journal into it.
func TestResetSentinelsAreStored(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s, err := Open(Config{Dir: dir})
	require.NoError(t, err)
	require.NoError(t, s.Commit("billing", []Entry{ent("orders", 0, 5), ent("orders", 1, 9)}))
	require.NoError(t, s.Commit("billing", []Entry{ent("orders", 0, ResetEarliest), ent("orders", 2, ResetLatest)}))
	want := map[string][]Entry{"billing": {ent("orders", 0, -2), ent("orders", 1, 9), ent("orders", 2, -1)}}
	require.Equal(t, want, snapshot(s), "memory after the commits")
	require.Equal(t, want, reopen(t, dir), "the journal, read by a restarted store")
	require.NoError(t, s.Close())
	require.Equal(t, []string{FileName}, dirNames(t, dir), "Close folds the journal")
	require.Contains(t, string(readOffsets(t, dir)), "\"partition\": 2,\n        \"offset\": -1\n")
	require.Equal(t, want, reopen(t, dir), "offsets.json, read by a restarted store")
}

func TestCommitLaterEntriesWin(t *testing.T) {
	t.Parallel()
	s := openStore(t, t.TempDir(), nil)
	require.NoError(t, s.Commit("billing", []Entry{ent("orders", 0, 1), ent("orders", 0, 3), ent("orders", 0, 2)}))
	got, ok := s.Lookup("billing", "orders", 0)
	require.True(t, ok)
	require.Equal(t, int64(2), got.Offset)
}
func TestEnqueueRejectsInvalidCommit(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		entries []Entry
		want    error
	}{
		{name: "offset -3", entries: []Entry{ent("orders", 1, -3)}, want: ErrNegativeOffset},
		{name: "negative offset beside a good entry and a sentinel", entries: []Entry{ent("orders", 1, 10), ent("orders", 3, -1), ent("orders", 2, -3)}, want: ErrNegativeOffset},
		{name: "metadata too large", entries: []Entry{{Topic: "orders", Partition: 1, Offset: 10, Metadata: string(make([]byte, MaxMetadataBytes+1))}}, want: ErrMetadataTooLarge},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			rec := &recordFS{}
			s := openStore(t, dir, rec)
			require.NoError(t, s.Commit("billing", []Entry{ent("orders", 0, 6)}))
			writes := rec.count()
			before := readOffsets(t, dir)

			wait := s.Enqueue("billing", tc.entries)
			require.ErrorIs(t, wait(), tc.want)
			require.ErrorIs(t, s.Commit("shipping", tc.entries), tc.want)

			require.Equal(t, writes, rec.count(), "nothing is written")
			require.Equal(t, before, readOffsets(t, dir))
			require.Equal(t, map[string][]Entry{"billing": {ent("orders", 0, 6)}}, snapshot(s))

			// A later commit carries nothing of the rejected one.
			require.NoError(t, s.Commit("billing", []Entry{ent("orders", 0, 7)}))
			require.Equal(t, map[string][]Entry{"billing": {ent("orders", 0, 7)}}, reopen(t, dir))
		})
	}
}
func TestStoreCopiesEntries(t *testing.T) {
	t.Parallel()
	s := openStore(t, t.TempDir(), nil)
	entries := []Entry{ent("orders", 0, 6)}
	wait := s.Enqueue("billing", entries)
	entries[0].Offset = 99
	require.NoError(t, wait())
	require.Equal(t, []Entry{ent("orders", 0, 6)}, s.Committed("billing"), "Enqueue copies its argument")

	got := s.Committed("billing")
	got[0].Offset = 99
	require.Equal(t, []Entry{ent("orders", 0, 6)}, s.Committed("billing"), "Committed returns a copy")
}
func TestLookupMissing(t *testing.T) {
	t.Parallel()
	s := openStore(t, t.TempDir(), nil)
	require.NoError(t, s.Commit("billing", []Entry{ent("orders", 0, 6)}))
	tests := []struct {
		name, group, topic string
		partition          int32
	}{
		{name: "unknown group", group: "shipping", topic: "orders", partition: 0},
		{name: "unknown topic", group: "billing", topic: "audit", partition: 0},
		{name: "unknown partition", group: "billing", topic: "orders", partition: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, ok := s.Lookup(tc.group, tc.topic, tc.partition)
			require.False(t, ok)
			require.Equal(t, Entry{}, got)
		})
	}
}
func TestClose(t *testing.T) {
	t.Parallel()

	t.Run("flushes enqueued commits", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		s := openStore(t, dir, nil)
		waits := []func() error{
			s.Enqueue("billing", []Entry{ent("orders", 0, 6)}),
			s.Enqueue("shipping", []Entry{ent("orders", 1, 3)}),
			s.Enqueue("billing", []Entry{ent("orders", 0, 7)}),
		}
		require.NoError(t, s.Close())
		want := map[string][]Entry{"billing": {ent("orders", 0, 7)}, "shipping": {ent("orders", 1, 3)}}
		require.Equal(t, want, reopen(t, dir))
		for _, wait := range waits {
			require.NoError(t, wait(), "waits after Close report the flushed commit")
		}
		require.Equal(t, want, snapshot(s), "a closed store still answers reads")
	})

	t.Run("waits for a write in flight", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		gate := newGateFS(atomicfile.OS{})
		s := openStore(t, dir, gate)
		gate.arm(t)
		committed := make(chan error, 1)
		go func() { committed <- s.Commit("billing", []Entry{ent("orders", 0, 6)}) }()
		waitFor(t, gate.entered, "the write to start")

		closed := make(chan error, 1)
		go func() { closed <- s.Close() }()
		select {
		case <-closed:
			t.Fatal("Close returned while a write was in flight")
		case <-committed:
			t.Fatal("the commit returned before its write")
		default:
		}
		gate.open()
		require.NoError(t, waitFor(t, committed, "the commit"))
		require.NoError(t, waitFor(t, closed, "Close"))
		require.Equal(t, map[string][]Entry{"billing": {ent("orders", 0, 6)}}, reopen(t, dir))
	})

	t.Run("idempotent", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		s := openStore(t, dir, nil)
		require.NoError(t, s.Commit("billing", []Entry{ent("orders", 0, 6)}))
		require.NoError(t, s.Close())
		require.NoError(t, s.Close())
		require.Equal(t, map[string][]Entry{"billing": {ent("orders", 0, 6)}}, reopen(t, dir))
	})

	t.Run("refuses commits after close", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		rec := &recordFS{}
		s := openStore(t, dir, rec)
		require.NoError(t, s.Commit("billing", []Entry{ent("orders", 0, 6)}))
		require.NoError(t, s.Close())
		writes := rec.count()

		require.ErrorIs(t, s.Enqueue("billing", []Entry{ent("orders", 0, 7)})(), ErrClosed)
		require.ErrorIs(t, s.Commit("shipping", []Entry{ent("orders", 0, 1)}), ErrClosed)
		require.Equal(t, writes, rec.count())
		require.Equal(t, map[string][]Entry{"billing": {ent("orders", 0, 6)}}, snapshot(s))
		require.Equal(t, map[string][]Entry{"billing": {ent("orders", 0, 6)}}, reopen(t, dir))
	})

	t.Run("reports a failed final write", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		fsys := newFaultFS(stepSync)
		s := openStore(t, dir, fsys)
		require.NoError(t, s.Commit("billing", []Entry{ent("orders", 0, 6)}))
		wait := s.Enqueue("billing", []Entry{ent("orders", 0, 7)})
		fsys.arm()

		err := s.Close()
		require.ErrorIs(t, err, ErrStorage)
		require.ErrorIs(t, err, errInjected)
		require.ErrorIs(t, wait(), ErrStorage)
		require.NoError(t, s.Close(), "a second Close has nothing to write")
		require.Equal(t, []Entry{ent("orders", 0, 6)}, s.Committed("billing"))
		require.Equal(t, map[string][]Entry{"billing": {ent("orders", 0, 6)}}, reopen(t, dir))
	})
}

// TestEnqueueRejectsEntriesTheFileCannotHold covers entries that would be
// written but not load back, or load back changed.
func TestEnqueueRejectsEntriesTheFileCannotHold(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		group string
		entry Entry
	}{
		"empty topic":            {"g", Entry{Topic: "", Partition: 0, Offset: 1}},
		"negative partition":     {"g", Entry{Topic: "orders", Partition: -1, Offset: 1}},
		"invalid UTF-8 topic":    {"g", Entry{Topic: "or\xffders", Offset: 1}},
		"invalid UTF-8 metadata": {"g", Entry{Topic: "orders", Offset: 1, Metadata: "\xff"}},
		"invalid UTF-8 group":    {"g\xff", Entry{Topic: "orders", Offset: 1}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			s := openStore(t, dir, nil)
			require.ErrorIs(t, s.Commit(tc.group, []Entry{tc.entry}), ErrInvalidEntry)
			require.Empty(t, s.Groups())
			require.Equal(t, emptyFile, string(readOffsets(t, dir)))
		})
	}
}
func TestGroupsSkipsGroupsWithoutOffsets(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeOffsets(t, dir, []byte(`{"version":1,"groups":{"empty":[],"billing":[{"topic":"orders","partition":0,"offset":6}]}}`))
	s := openStore(t, dir, nil)
	require.Equal(t, []string{"billing"}, s.Groups())
	require.NoError(t, s.Commit("nothing", nil))
	require.Equal(t, []string{"billing"}, s.Groups())
	require.NotContains(t, string(readOffsets(t, dir)), `"nothing"`)
}

// TestDeleteThenReopen: deleted groups and partitions stay deleted after a
// restart, from the journal and, after Close, from offsets.json.
func TestDeleteThenReopen(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s, err := Open(Config{Dir: dir})
	require.NoError(t, err)
	require.NoError(t, s.Commit("billing", []Entry{ent("orders", 0, 6), ent("orders", 1, 7), ent("audit", 0, 1)}))
	require.NoError(t, s.Commit("shipping", []Entry{ent("orders", 0, 3)}))
	require.NoError(t, s.Delete("shipping")())
	require.NoError(t, s.DeleteOffsets("billing", []Key{{Topic: "orders", Partition: 1}, {Topic: "audit", Partition: 0}})())
	require.NoError(t, s.Delete("never-committed")())

	want := map[string][]Entry{"billing": {ent("orders", 0, 6)}}
	require.Equal(t, want, snapshot(s))
	require.Equal(t, want, reopen(t, dir), "from the journal")
	require.Equal(t, []string{"billing"}, s.Groups())
	_, ok := s.Lookup("shipping", "orders", 0)
	require.False(t, ok)
	st := s.Stats()
	require.Equal(t, int64(2), st.Commits)
	require.Equal(t, int64(3), st.Deletes)

	require.NoError(t, s.Close())
	require.Equal(t, []string{FileName}, dirNames(t, dir))
	require.Equal(t, want, reopen(t, dir), "from offsets.json alone")
	require.NotContains(t, string(readOffsets(t, dir)), "shipping")
}

// TestDeleteOrderFollowsEnqueue: a delete takes its place among commits
// where it was enqueued, whichever wait runs first: a commit enqueued
// before it is deleted, one enqueued after it stays.
func TestDeleteOrderFollowsEnqueue(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	rec := &recordFS{}
	gate := newGateFS(rec)
	s := openStore(t, dir, gate)
	writesBefore := rec.count()
	gate.arm(t)

	// The first commit holds the writer in CreateTemp; the rest queue up
	// behind it and share the next record.
	waits := []func() error{s.Enqueue("billing", []Entry{ent("orders", 0, 1)})}
	errs := make(chan error, 5)
	go func() { errs <- waits[0]() }()
	waitFor(t, gate.entered, "the first write to start")
	waits = append(waits,
		s.Enqueue("billing", []Entry{ent("orders", 1, 2)}),
		s.Delete("billing"),
		s.Enqueue("billing", []Entry{ent("orders", 2, 3)}),
		s.DeleteOffsets("billing", []Key{{Topic: "orders", Partition: 0}}),
	)
	for _, wait := range slices.Backward(waits[1:]) {
		go func() { errs <- wait() }()
	}
	gate.open()
	for range waits {
		require.NoError(t, waitFor(t, errs, "an op"))
	}
	want := []Entry{ent("orders", 2, 3)}
	require.Equal(t, want, s.Committed("billing"))
	states := rec.states(t, writesBefore)
	require.Len(t, states, 2, "the first commit, then one record for the rest")
	require.Equal(t, []Entry{ent("orders", 0, 1)}, states[0].sorted("billing"))
	require.Equal(t, want, states[1].sorted("billing"))
	require.Equal(t, map[string][]Entry{"billing": want}, reopen(t, dir))
}

// TestExpire: with commit times set by the caller, Expire removes the
// entries committed at or before the cutoff; commit times survive the
// journal and offsets.json, and entries without one never expire.
func TestExpire(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s, err := Open(Config{Dir: dir})
	require.NoError(t, err)
	t0 := time.UnixMilli(1_700_000_000_000)
	at := func(d time.Duration, e Entry) Entry { e.CommitTimestampMs = t0.Add(d).UnixMilli(); return e }
	require.NoError(t, s.Commit("billing", []Entry{at(0, ent("orders", 0, 6)), at(time.Minute, ent("orders", 1, 7)), ent("orders", 2, 8)}))
	require.NoError(t, s.Commit("shipping", []Entry{at(0, ent("orders", 0, 3))}))
	require.NoError(t, s.Close())
	require.Contains(t, string(readOffsets(t, dir)), `"commit_timestamp_ms": 1700000060000`)

	s = openStore(t, dir, nil)
	// Expire orders-0 (committed at t0); a commit of orders-1 enqueued
	// before the expiry, with a newer time, is not expired by it.
	waitCommit := s.Enqueue("billing", []Entry{at(2*time.Minute, ent("orders", 1, 9))})
	waitExpire := s.Expire("billing", t0.Add(90*time.Second))
	require.NoError(t, waitExpire())
	require.NoError(t, waitCommit())
	want := map[string][]Entry{
		"billing":  {at(2*time.Minute, ent("orders", 1, 9)), ent("orders", 2, 8)},
		"shipping": {at(0, ent("orders", 0, 3))},
	}
	require.Equal(t, want, snapshot(s))
	require.Equal(t, want, reopen(t, dir))
}
