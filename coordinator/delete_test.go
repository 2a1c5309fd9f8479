package coordinator

import (
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/minibroker/minibroker/internal/testutil"
	"github.com/minibroker/minibroker/offsets"
)

// TestDeleteGroupsPerGroupResults: one DeleteGroups answers each name as
// Kafka's GroupCoordinatorShard.deleteGroups does: Empty groups (classic,
// consumer, known only by offsets, holding only pending ids, the empty
// id) are deleted with their offsets; groups with members are
// NON_EMPTY_GROUP; unknown ones GROUP_ID_NOT_FOUND; ids no group can have
// INVALID_GROUP_ID.
func TestDeleteGroupsPerGroupResults(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	res := f.join("left", "a", "orders")
	require.NoError(t, f.commit("left", "a", res.Generation, "orders-0"))
	f.c.Leave("left", "a")
	f.join("busy", "b", "orders")
	f.consumerJoin("consumer-busy", "c", "orders")
	f.consumerJoin("consumer-left", "d", "orders")
	_, err := f.c.ConsumerHeartbeat(consumerReq("consumer-left", "d", LeaveEpoch))
	require.NoError(t, err)
	require.NoError(t, f.c.CommitDirect("manual", entries("orders-1", "payments-0")))
	require.NoError(t, f.c.CommitDirect("", entries("orders-2")))
	pending, err := f.c.Join(wireJoin("pending", "", roundrobin("orders")))
	require.ErrorIs(t, err, ErrMemberIDRequired)

	names := []string{"left", "busy", "consumer-busy", "consumer-left", "manual", "", "pending", "nope", "bad\x00id", strings.Repeat("g", 256), "manual"}
	errs := f.c.DeleteGroups(names...)
	require.Len(t, errs, len(names))
	want := []error{nil, ErrNonEmptyGroup, ErrNonEmptyGroup, nil, nil, nil, nil, ErrGroupIDNotFound, ErrInvalidGroupID, ErrInvalidGroupID, ErrGroupIDNotFound}
	for i, w := range want {
		if w == nil {
			require.NoError(t, errs[i], names[i])
		} else {
			require.ErrorIs(t, errs[i], w, names[i])
		}
	}
	for _, g := range []string{"left", "consumer-left", "manual", "", "pending"} {
		_, ok := f.c.Describe(g)
		require.False(t, ok, "%q is gone", g)
		require.Empty(t, f.c.Committed(g), "%q's offsets are gone", g)
		require.False(t, f.listed(g), "%q is listed no more", g)
	}
	for _, g := range []string{"busy", "consumer-busy"} {
		v, ok := f.c.Describe(g)
		require.True(t, ok)
		require.Len(t, v.Members, 1, "a group with members is left as it was")
	}
	_, err = f.c.Join(wireJoin("pending", pending.MemberID, roundrobin("orders")))
	require.ErrorIs(t, err, ErrUnknownMemberID, "a pending id goes with its group")
}

// TestDeletedGroupStartsAfresh: a deleted group's name is free; a join
// creates a new group at generation 1, with no offsets.
func TestDeletedGroupStartsAfresh(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.join("g", "a", "orders")
	f.join("g", "b", "orders")
	require.NoError(t, f.commit("g", "a", 2, "orders-0"))
	f.c.Leave("g", "a", "b")
	require.Equal(t, []error{nil}, f.c.DeleteGroups("g"))
	res := f.join("g", "c", "payments")
	require.Equal(t, int32(1), res.Generation)
	require.Empty(t, f.c.Committed("g"))
}

// TestDeleteGroupsFreesMaxGroupsPlaces is the junk-groups scenario at
// small scale: direct commits fill MaxGroups, a new group is refused,
// and deleting groups frees places for new ones.
func TestDeleteGroupsFreesMaxGroupsPlaces(t *testing.T) {
	t.Parallel()
	f := newFixtureWith(t, Config{Settings: Settings{MaxGroups: 3}})
	for _, g := range []string{"junk-1", "junk-2", "junk-3"} {
		require.NoError(t, f.c.CommitDirect(g, entries("orders-0")))
	}
	require.ErrorIs(t, f.c.CommitDirect("new", entries("orders-0")), ErrTooManyGroups)
	_, err := f.c.Join(JoinRequest{Group: "joined", MemberID: "a", SessionTimeout: time.Second, Topics: []string{"orders"}})
	require.ErrorIs(t, err, ErrTooManyGroups)

	require.Equal(t, []error{nil, nil}, f.c.DeleteGroups("junk-1", "junk-2"))
	require.NoError(t, f.c.CommitDirect("new", entries("orders-0")))
	f.join("joined", "a", "orders")
	require.ErrorIs(t, f.c.CommitDirect("newer", entries("orders-0")), ErrTooManyGroups, "3 groups again")

	f.c.Leave("joined", "a")
	require.Equal(t, []error{nil}, f.c.DeleteGroups("joined"), "an Empty classic group frees its place too")
	require.NoError(t, f.c.CommitDirect("newer", entries("orders-0")))
}

// TestDeleteGroupsOrderedAfterCommitOnItsWay: a direct commit still
// waiting for its disk makes its group exist; the deletion ordered after
// it removes its offsets, and the group may then be created again.
func TestDeleteGroupsOrderedAfterCommitOnItsWay(t *testing.T) {
	t.Parallel()
	store := &slowStore{Memory: offsets.NewMemory(), slowGroup: "A", waiting: make(chan struct{}), release: make(chan struct{})}
	f := newFixtureWith(t, Config{Store: store, Settings: Settings{MaxGroups: 1}})
	done := make(chan error, 1)
	go func() { done <- f.c.CommitDirect("A", entries("orders-0")) }()
	<-store.waiting
	require.Equal(t, []error{nil}, f.c.DeleteGroups("A"), "a commit on its way makes the group exist")
	close(store.release)
	require.NoError(t, <-done)
	require.Empty(t, f.c.Committed("A"), "the deletion came after the commit")
	require.NoError(t, f.c.CommitDirect("B", entries("orders-0")), "A's place is free")
}

// TestDeleteGroupsStorageFailureKeepsTheGroup: a deletion the disk
// refuses is the store's error; the offsets stay, and the group still
// counts against MaxGroups.
func TestDeleteGroupsStorageFailureKeepsTheGroup(t *testing.T) {
	t.Parallel()
	store := &failingStore{Memory: offsets.NewMemory()}
	f := newFixtureWith(t, Config{Store: store, Settings: Settings{MaxGroups: 2}})
	require.NoError(t, f.c.CommitDirect("manual", entries("orders-0")))
	res := f.join("left", "a", "orders")
	require.NoError(t, f.commit("left", "a", res.Generation, "orders-1"))
	f.c.Leave("left", "a")
	store.failRemovals = true
	errs := f.c.DeleteGroups("manual", "left")
	require.ErrorIs(t, errs[0], offsets.ErrStorage)
	require.ErrorIs(t, errs[1], offsets.ErrStorage)
	require.Len(t, f.c.Committed("manual"), 1)
	require.Len(t, f.c.Committed("left"), 1)
	require.True(t, f.listed("manual"))
	require.True(t, f.listed("left"), "known by its offsets now")
	require.ErrorIs(t, f.c.CommitDirect("new", entries("orders-0")), ErrTooManyGroups)
	store.failRemovals = false
	require.Equal(t, []error{nil, nil}, f.c.DeleteGroups("manual", "left"))
	require.NoError(t, f.c.CommitDirect("new", entries("orders-0")))
}

// TestDeleteGroupsForgetsGroupOfRefusedCommit: a direct commit the disk
// refused leaves its group counted with nothing in it; DeleteGroups
// answers GROUP_ID_NOT_FOUND and frees the place.
func TestDeleteGroupsForgetsGroupOfRefusedCommit(t *testing.T) {
	t.Parallel()
	store := &failingStore{Memory: offsets.NewMemory(), failCommits: true}
	f := newFixtureWith(t, Config{Store: store, Settings: Settings{MaxGroups: 1}})
	require.ErrorIs(t, f.c.CommitDirect("refused", entries("orders-0")), offsets.ErrStorage)
	store.failCommits = false
	require.ErrorIs(t, f.c.CommitDirect("other", entries("orders-0")), ErrTooManyGroups, "the refused group counts")
	require.ErrorIs(t, f.c.DeleteGroups("refused")[0], ErrGroupIDNotFound)
	require.NoError(t, f.c.CommitDirect("other", entries("orders-0")))
}

// TestDeleteGroupsReportsAndLogs: OnGroupDeleted hears of each group
// deleted, once its deletion is durable, and each is logged; refused
// deletions are not reported.
func TestDeleteGroupsReportsAndLogs(t *testing.T) {
	t.Parallel()
	logs := testutil.NewLogRecorder(t.Output(), slog.LevelWarn)
	var deleted []string
	f := newFixtureWith(t, Config{Logger: logs.Logger(), OnGroupDeleted: func(g string) { deleted = append(deleted, g) }})
	require.NoError(t, f.c.CommitDirect("b", entries("orders-0")))
	require.NoError(t, f.c.CommitDirect("a", entries("orders-0")))
	f.join("busy", "m", "orders")
	f.c.DeleteGroups("b", "busy", "nope", "a")
	require.Equal(t, []string{"b", "a"}, deleted)
	require.Equal(t, []testutil.Record{
		{Level: slog.LevelInfo, Message: "group deleted", Attrs: map[string]string{"group": "b", "reason": "request"}},
		{Level: slog.LevelInfo, Message: "group deleted", Attrs: map[string]string{"group": "a", "reason": "request"}},
	}, logs.Find("group deleted"))
}

// TestDeleteOffsetsRules follows Kafka's OffsetDelete: partitions of a
// topic a member subscribes to are GROUP_SUBSCRIBED_TO_TOPIC and kept,
// unknown partitions UNKNOWN_TOPIC_OR_PARTITION, the rest deleted
// (whether committed or not); the group stays.
func TestDeleteOffsetsRules(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	res := f.join("g", "a", "orders")
	require.NoError(t, f.commit("g", "a", res.Generation, "orders-0", "orders-1"))
	require.NoError(t, f.c.CommitDirect("g", entries("payments-0")))
	errs, err := f.c.DeleteOffsets("g", keys("orders-0", "payments-0", "nope-0", "orders-9"))
	require.NoError(t, err)
	require.Len(t, errs, 4)
	require.ErrorIs(t, errs[0], ErrGroupSubscribedToTopic)
	require.NoError(t, errs[1])
	require.ErrorIs(t, errs[2], ErrUnknownTopic)
	require.ErrorIs(t, errs[3], ErrUnknownTopic)
	require.Equal(t, []string{"orders-0", "orders-1"}, committedNames(f.c.Committed("g")))
	state, _ := f.state("g")
	require.Equal(t, Stable, state)

	f.c.Leave("g", "a")
	errs, err = f.c.DeleteOffsets("g", keys("orders-0", "orders-1", "orders-3"))
	require.NoError(t, err)
	require.Equal(t, []error{nil, nil, nil}, errs, "an Empty group subscribes to nothing; orders-3 had no offset")
	require.Empty(t, f.c.Committed("g"))
	_, ok := f.c.Describe("g")
	require.True(t, ok, "an Empty group with state stays, without offsets")
}

// TestDeleteOffsetsConsumerGroupSubscriptions: a consumer (KIP-848)
// group's subscribed topics are its members' subscriptions.
func TestDeleteOffsetsConsumerGroupSubscriptions(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.consumerJoin("g", "m", "payments")
	require.NoError(t, f.c.CommitDirect("g", entries("orders-0", "payments-0")))
	errs, err := f.c.DeleteOffsets("g", keys("orders-0", "payments-0"))
	require.NoError(t, err)
	require.NoError(t, errs[0])
	require.ErrorIs(t, errs[1], ErrGroupSubscribedToTopic)
	require.Equal(t, []string{"payments-0"}, committedNames(f.c.Committed("g")))
}

// TestDeleteOffsetsGroupErrors: the group-level errors come first and
// alone: INVALID_GROUP_ID (the empty id too, as Kafka's
// GroupCoordinatorService.deleteOffsets), GROUP_ID_NOT_FOUND, and a
// refused removal, which removes nothing.
func TestDeleteOffsetsGroupErrors(t *testing.T) {
	t.Parallel()
	store := &failingStore{Memory: offsets.NewMemory()}
	f := newFixtureWith(t, Config{Store: store})
	for _, id := range []string{"", "bad\nid"} {
		_, err := f.c.DeleteOffsets(id, keys("orders-0"))
		require.ErrorIs(t, err, ErrInvalidGroupID, "%q", id)
	}
	_, err := f.c.DeleteOffsets("nope", keys("nope-0"))
	require.ErrorIs(t, err, ErrGroupIDNotFound, "the group is checked before the topics")
	require.NoError(t, f.c.CommitDirect("g", entries("orders-0")))
	store.failRemovals = true
	errs, err := f.c.DeleteOffsets("g", keys("orders-0"))
	require.ErrorIs(t, err, offsets.ErrStorage)
	require.Nil(t, errs)
	require.Len(t, f.c.Committed("g"), 1)
}

// TestDeleteOffsetsOfLastOffsetDeletesGroupKnownByOffsets: a group known
// only by its offsets that loses the last of them is gone: reported,
// unlisted, and its MaxGroups place is free.
func TestDeleteOffsetsOfLastOffsetDeletesGroupKnownByOffsets(t *testing.T) {
	t.Parallel()
	var deleted []string
	f := newFixtureWith(t, Config{Settings: Settings{MaxGroups: 1}, OnGroupDeleted: func(g string) { deleted = append(deleted, g) }})
	require.NoError(t, f.c.CommitDirect("manual", entries("orders-0", "orders-1")))
	_, err := f.c.DeleteOffsets("manual", keys("orders-0"))
	require.NoError(t, err)
	require.Empty(t, deleted, "one offset is left")
	require.ErrorIs(t, f.c.CommitDirect("other", entries("orders-0")), ErrTooManyGroups)
	_, err = f.c.DeleteOffsets("manual", keys("orders-1"))
	require.NoError(t, err)
	require.Equal(t, []string{"manual"}, deleted)
	require.False(t, f.listed("manual"))
	require.NoError(t, f.c.CommitDirect("other", entries("orders-0")))
	_, err = f.c.DeleteOffsets("manual", keys("orders-1"))
	require.ErrorIs(t, err, ErrGroupIDNotFound)
}

// committedNames renders committed offsets as "topic-partition" names.
func committedNames(es []offsets.Entry) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.Topic + "-" + strconv.Itoa(int(e.Partition))
	}
	return out
}
