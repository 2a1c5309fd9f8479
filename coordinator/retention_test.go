package coordinator

import (
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/minibroker/minibroker/internal/testutil"
	"github.com/minibroker/minibroker/offsets"
)

// TestRetentionOffByDefault: without Config.OffsetsRetention, as in the
// chapter, offsets and Empty groups are kept for ever.
func TestRetentionOffByDefault(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.advance(1000)
	require.NoError(t, f.c.CommitDirect("manual", entries("orders-0")))
	f.join("left", "a", "orders")
	f.c.Leave("left", "a")
	_, err := f.clock.Advance(100 * 365 * 24 * time.Hour)
	require.NoError(t, err)
	require.Empty(t, f.c.ExpireStep().Offsets)
	require.Len(t, f.c.Committed("manual"), 1)
	require.True(t, f.listed("left"))
}

// TestRetentionEmptyClassicGroupFromWhenItBecameEmpty follows Kafka's
// ClassicGroup.offsetExpirationCondition (KIP-211): an Empty classic
// group's offsets all expire retention after the group became Empty,
// whatever their commit times (even a direct commit made since), and the
// group is deleted with them, at exactly that instant.
func TestRetentionEmptyClassicGroupFromWhenItBecameEmpty(t *testing.T) {
	t.Parallel()
	f, deleted := retentionFixture(t, 1000, Config{Settings: Settings{MaxGroups: 2}})
	res := f.join("g", "a", "orders") // t=1000
	require.NoError(t, f.commit("g", "a", res.Generation, "orders-0"))
	f.advance(500)
	f.c.Leave("g", "a") // Empty at 1500
	f.advance(900)
	require.NoError(t, f.c.CommitDirect("g", entries("orders-1"))) // t=2400
	require.NoError(t, f.c.CommitDirect("other", entries("orders-1")))
	require.ErrorIs(t, f.c.CommitDirect("third", entries("orders-0")), ErrTooManyGroups)

	f.advance(99) // 2499: Empty for 999 ms
	require.Empty(t, f.c.ExpireStep().Offsets)
	require.Len(t, f.c.Committed("g"), 2)

	f.advance(1) // 2500: Empty for exactly the retention
	require.Equal(t, []ExpiredOffsets{{Group: "g", Offsets: 2, Deleted: true}}, f.c.ExpireStep().Offsets)
	require.Empty(t, f.c.Committed("g"))
	_, ok := f.c.Describe("g")
	require.False(t, ok)
	require.False(t, f.listed("g"))
	require.Equal(t, []string{"g"}, *deleted)
	require.NoError(t, f.c.CommitDirect("third", entries("orders-0")), "g's place is free")
}

// TestRetentionGroupKnownByOffsetsFromEachCommit: a group known only by
// its offsets (Kafka's group without a protocol type) loses each offset
// retention after its own commit, and goes with its last one.
func TestRetentionGroupKnownByOffsetsFromEachCommit(t *testing.T) {
	t.Parallel()
	f, deleted := retentionFixture(t, 1000, Config{})
	require.NoError(t, f.c.CommitDirect("manual", entries("orders-0"))) // t=1000
	f.advance(500)
	require.NoError(t, f.c.CommitDirect("manual", entries("orders-0", "orders-1"))) // t=1500, orders-0 again
	require.NoError(t, f.c.CommitDirect("manual", []offsets.Entry{{Topic: "payments", Partition: 0, Offset: 3, LeaderEpoch: -1}}))
	f.advance(500) // 2000: orders-0's first commit was replaced
	require.Empty(t, f.c.ExpireStep().Offsets)
	f.advance(499)
	require.Empty(t, f.c.ExpireStep().Offsets)
	f.advance(1) // 2500
	require.Equal(t, []ExpiredOffsets{{Group: "manual", Offsets: 3, Deleted: true}}, f.c.ExpireStep().Offsets)
	require.Equal(t, []string{"manual"}, *deleted)
	require.False(t, f.listed("manual"))
}

// TestRetentionExpiresOffsetsOneByOne: offsets committed at different
// times expire at different steps; the group stays while one is left.
func TestRetentionExpiresOffsetsOneByOne(t *testing.T) {
	t.Parallel()
	f, deleted := retentionFixture(t, 1000, Config{})
	require.NoError(t, f.c.CommitDirect("manual", entries("orders-0")))
	f.advance(300)
	require.NoError(t, f.c.CommitDirect("manual", entries("orders-1")))
	f.advance(700) // 2000
	require.Equal(t, []ExpiredOffsets{{Group: "manual", Offsets: 1}}, f.c.ExpireStep().Offsets)
	require.Len(t, f.c.Committed("manual"), 1)
	require.Empty(t, *deleted)
	f.advance(300)
	require.Equal(t, []ExpiredOffsets{{Group: "manual", Offsets: 1, Deleted: true}}, f.c.ExpireStep().Offsets)
}

// TestRetentionKeepsGroupsWithMembers: nothing of a group with members
// expires, however old its offsets.
func TestRetentionKeepsGroupsWithMembers(t *testing.T) {
	t.Parallel()
	f, _ := retentionFixture(t, 1000, Config{})
	res := f.joinSession("g", "a", 20*time.Minute, "orders")
	require.NoError(t, f.commit("g", "a", res.Generation, "orders-0"))
	f.consumerJoin("c", "m", "orders")
	require.NoError(t, f.c.CommitDirect("c", entries("payments-0")))
	f.advance(10_000)
	require.Empty(t, f.c.ExpireStep().Offsets)
	require.Len(t, f.c.Committed("g"), 1)
	require.Len(t, f.c.Committed("c"), 1)
}

// TestRetentionEmptyConsumerGroupFromEachCommit follows Kafka's
// ConsumerGroup.offsetExpirationCondition: an Empty consumer (KIP-848)
// group's offsets expire by commit time, so offsets older than the
// retention go at the step that finds the group Empty; the group itself
// goes once it has been Empty for the retention.
func TestRetentionEmptyConsumerGroupFromEachCommit(t *testing.T) {
	t.Parallel()
	f, deleted := retentionFixture(t, 1000, Config{Settings: Settings{ConsumerSessionTimeout: time.Hour}})
	f.consumerJoin("c", "m", "orders") // t=1000
	require.NoError(t, f.c.CommitDirect("c", entries("orders-0")))
	f.advance(4000)
	_, err := f.c.ConsumerHeartbeat(consumerReq("c", "m", LeaveEpoch)) // Empty at 5000
	require.NoError(t, err)
	require.Equal(t, []ExpiredOffsets{{Group: "c", Offsets: 1}}, f.c.ExpireStep().Offsets)
	_, ok := f.c.Describe("c")
	require.True(t, ok, "the group stays until it has been Empty for the retention")
	f.advance(999)
	require.Empty(t, f.c.ExpireStep().Offsets)
	f.advance(1)
	require.Equal(t, []ExpiredOffsets{{Group: "c", Deleted: true}}, f.c.ExpireStep().Offsets)
	require.Equal(t, []string{"c"}, *deleted)
	_, ok = f.c.Describe("c")
	require.False(t, ok)
}

// TestRetentionGroupEmptiedByExpiry: members expire first in the step,
// so a classic group emptied by expiry starts its retention then.
func TestRetentionGroupEmptiedByExpiry(t *testing.T) {
	t.Parallel()
	f, _ := retentionFixture(t, 1000, Config{})
	res := f.joinSession("g", "a", 100*scale, "orders")
	require.NoError(t, f.commit("g", "a", res.Generation, "orders-0"))
	f.advance(101)
	step := f.c.ExpireStep()
	require.Equal(t, []Expired{{Group: "g", MemberID: "a"}}, step.Members)
	require.Empty(t, step.Offsets, "Empty since now")
	f.advance(999)
	require.Empty(t, f.c.ExpireStep().Offsets)
	f.advance(1)
	require.Equal(t, []ExpiredOffsets{{Group: "g", Offsets: 1, Deleted: true}}, f.c.ExpireStep().Offsets)
}

// TestRetentionRestartMeasuresFromCommitTimes: a group loaded from the
// store has no state, so it is a group known by its offsets: each offset
// expires retention after its commit time. An offset without a commit
// time (a file from before they were kept) never expires.
func TestRetentionRestartMeasuresFromCommitTimes(t *testing.T) {
	t.Parallel()
	store := offsets.NewMemory()
	require.NoError(t, store.Commit("old", []offsets.Entry{{Topic: "orders", Partition: 0, Offset: 5, CommitTimestampMs: 500}}))
	require.NoError(t, store.Commit("timeless", []offsets.Entry{
		{Topic: "orders", Partition: 0, Offset: 5},
		{Topic: "orders", Partition: 1, Offset: 5, CommitTimestampMs: 900},
	}))
	f, deleted := retentionFixture(t, 1000, Config{Store: store, Settings: Settings{MaxGroups: 2}})
	f.advance(499) // 1499
	require.Empty(t, f.c.ExpireStep().Offsets)
	f.advance(1)
	require.Equal(t, []ExpiredOffsets{{Group: "old", Offsets: 1, Deleted: true}}, f.c.ExpireStep().Offsets)
	f.advance(399)
	require.Empty(t, f.c.ExpireStep().Offsets)
	f.advance(1) // 1900
	require.Equal(t, []ExpiredOffsets{{Group: "timeless", Offsets: 1}}, f.c.ExpireStep().Offsets)
	require.Equal(t, []string{"old"}, *deleted)
	_, err := f.clock.Advance(24 * time.Hour)
	require.NoError(t, err)
	require.Empty(t, f.c.ExpireStep().Offsets)
	require.Equal(t, []offsets.Entry{{Topic: "orders", Partition: 0, Offset: 5}}, store.Committed("timeless"))
	require.NoError(t, f.c.CommitDirect("new", entries("orders-0")), "old's place is free")
}

// TestRetentionWaitsForCommitOnItsWay: a group with a commit still
// waiting for its disk is left for a later step; the new commit is kept
// and the older offset then expires.
func TestRetentionWaitsForCommitOnItsWay(t *testing.T) {
	t.Parallel()
	store := &slowStore{Memory: offsets.NewMemory(), slowGroup: "A", waiting: make(chan struct{}), release: make(chan struct{})}
	require.NoError(t, store.Commit("A", []offsets.Entry{{Topic: "orders", Partition: 0, Offset: 1, CommitTimestampMs: 1000}}))
	f, _ := retentionFixture(t, 1000, Config{Store: store})
	f.advance(1000) // 2000: A's offset is due
	done := make(chan error, 1)
	go func() { done <- f.c.CommitDirect("A", entries("orders-1")) }()
	<-store.waiting
	require.Empty(t, f.c.ExpireStep().Offsets, "A is busy")
	close(store.release)
	require.NoError(t, <-done)
	require.Equal(t, []ExpiredOffsets{{Group: "A", Offsets: 1}}, f.c.ExpireStep().Offsets)
	require.Equal(t, []string{"orders-1"}, committedNames(f.c.Committed("A")))
}

// TestRetentionStorageFailureKeepsTheGroup: a removal the disk refuses is
// logged at Error and changes nothing; the group is still known and is
// retried at a later step.
func TestRetentionStorageFailureKeepsTheGroup(t *testing.T) {
	t.Parallel()
	logs := testutil.NewLogRecorder(t.Output(), slog.LevelError+1)
	store := &failingStore{Memory: offsets.NewMemory()}
	f, deleted := retentionFixture(t, 1000, Config{Store: store, Logger: logs.Logger(), Settings: Settings{MaxGroups: 2}})
	require.NoError(t, f.c.CommitDirect("manual", entries("orders-0")))
	res := f.join("left", "a", "orders")
	require.NoError(t, f.commit("left", "a", res.Generation, "orders-0"))
	f.c.Leave("left", "a")
	f.advance(1000)
	store.failRemovals = true
	require.Empty(t, f.c.ExpireStep().Offsets)
	require.Len(t, logs.Find("offsets retention failed"), 2)
	require.Empty(t, *deleted)
	require.ErrorIs(t, f.c.CommitDirect("new", entries("orders-0")), ErrTooManyGroups, "both still count")
	store.failRemovals = false
	require.Equal(t, []ExpiredOffsets{{Group: "left", Offsets: 1, Deleted: true}, {Group: "manual", Offsets: 1, Deleted: true}},
		f.c.ExpireStep().Offsets)
}

// TestRetentionReportsAndLogs: each expiry of offsets and each group
// deleted is logged at Info, and OnGroupDeleted hears of the deletions.
func TestRetentionReportsAndLogs(t *testing.T) {
	t.Parallel()
	logs := testutil.NewLogRecorder(t.Output(), slog.LevelWarn)
	f, deleted := retentionFixture(t, 1000, Config{Logger: logs.Logger()})
	require.NoError(t, f.c.CommitDirect("b", entries("orders-0", "orders-1")))
	require.NoError(t, f.c.CommitDirect("a", entries("orders-0")))
	f.advance(1000)
	require.Empty(t, f.c.Expire(), "Expire still returns expired members only")
	require.Equal(t, []string{"a", "b"}, *deleted)
	require.Equal(t, []testutil.Record{
		{Level: slog.LevelInfo, Message: "offsets expired", Attrs: map[string]string{"group": "a", "offsets": "1"}},
		{Level: slog.LevelInfo, Message: "offsets expired", Attrs: map[string]string{"group": "b", "offsets": "2"}},
	}, logs.Find("offsets expired"))
	require.Equal(t, []testutil.Record{
		{Level: slog.LevelInfo, Message: "group deleted", Attrs: map[string]string{"group": "a", "reason": "retention"}},
		{Level: slog.LevelInfo, Message: "group deleted", Attrs: map[string]string{"group": "b", "reason": "retention"}},
	}, logs.Find("group deleted"))
}

// countingStore counts reads of committed offsets.
type countingStore struct {
	*offsets.Memory
	reads atomic.Int64
}

func (s *countingStore) Committed(group string) []offsets.Entry {
	s.reads.Add(1)
	return s.Memory.Committed(group)
}

// TestRetentionSkipsStepsUntilSomethingIsDue: expiry steps before the
// earliest moment anything can expire read nothing; a commit or a group
// that empties with an earlier moment is still expired on time.
func TestRetentionSkipsStepsUntilSomethingIsDue(t *testing.T) {
	t.Parallel()
	store := &countingStore{Memory: offsets.NewMemory()}
	f, _ := retentionFixture(t, 1000, Config{Store: store})
	require.NoError(t, f.c.CommitDirect("late", entries("orders-0"))) // due 2000
	f.c.ExpireStep()
	store.reads.Store(0)
	for range 5 {
		f.advance(100)
		require.Empty(t, f.c.ExpireStep().Offsets)
	}
	require.Zero(t, store.reads.Load(), "nothing was due before 2000")
	res := f.join("g", "a", "orders") // t=1500
	require.NoError(t, f.commit("g", "a", res.Generation, "orders-1"))
	f.c.Leave("g", "a") // due 2500
	f.advance(500)      // 2000
	require.Equal(t, []ExpiredOffsets{{Group: "late", Offsets: 1, Deleted: true}}, f.c.ExpireStep().Offsets)
	f.advance(499)
	require.Empty(t, f.c.ExpireStep().Offsets)
	f.advance(1)
	require.Equal(t, []ExpiredOffsets{{Group: "g", Offsets: 1, Deleted: true}}, f.c.ExpireStep().Offsets)
}

// TestRetentionConfig: a negative retention is refused.
func TestRetentionConfig(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	_, err := New(Config{Clock: f.clock, Settings: Settings{OffsetsRetention: -time.Second}})
	require.ErrorContains(t, err, "coordinator: OffsetsRetention must not be negative, got -1s")
}
