package coordinator

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/minibroker/minibroker/offsets"
)

func TestStageTxnCommitRunsTheCommitChecks(t *testing.T) {
	f := newFixture(t)
	a := f.join("g", "a", "orders")
	b := f.join("g", "b", "orders")
	req := func(member string, gen int32, parts ...string) CommitRequest {
		return CommitRequest{Group: "g", MemberID: member, Generation: gen, Entries: entries(parts...)}
	}
	require.ErrorIs(t, f.c.StageTxnCommit(7, req("a", a.Generation, "orders-0")), ErrIllegalGeneration, "a is a generation behind")
	require.ErrorIs(t, f.c.StageTxnCommit(7, req("ghost", b.Generation, "orders-0")), ErrUnknownMemberID)
	owned := f.member("g", "b").Assignment
	var notOwned string
	for _, p := range []string{"orders-0", "orders-1", "orders-2", "orders-3"} {
		if !strings.Contains(strings.Join(names(owned), ","), p) {
			notOwned = p
			break
		}
	}
	require.ErrorIs(t, f.c.StageTxnCommit(7, req("b", b.Generation, notOwned)), ErrNotPartitionOwner)
	require.ErrorIs(t, f.c.StageTxnCommit(7, CommitRequest{Group: "nope", MemberID: "b", Generation: 1, Entries: entries("orders-0")}), ErrUnknownMemberID)
	require.ErrorIs(t, f.c.StageTxnCommit(7, CommitRequest{Group: strings.Repeat("g", 300)}), ErrInvalidGroupID)
	require.ErrorIs(t, f.c.StageTxnCommit(7, CommitRequest{Group: "g", MemberID: strings.Repeat("m", 400)}), ErrInvalidMemberID)
	require.ErrorIs(t, f.c.StageTxnCommit(7, CommitRequest{Group: "g", Generation: -1, Entries: entries("nope-0")}), ErrUnknownTopic)
	bad := entries(names(owned)[0])
	bad[0].Offset = -5
	require.ErrorIs(t, f.c.StageTxnCommit(7, req("b", b.Generation)), nil)
	require.ErrorIs(t, f.c.StageTxnCommit(7, CommitRequest{Group: "g", MemberID: "b", Generation: b.Generation, Entries: bad}), offsets.ErrNegativeOffset)

	mine := names(owned)[0]
	require.NoError(t, f.c.StageTxnCommit(7, req("b", b.Generation, mine)))
	require.NoError(t, f.c.StageTxnCommit(8, CommitRequest{Group: "g", Generation: -1, Entries: entries("payments-0")}), "no member: not fenced")
	topic, part := tps(mine)[0].Topic, tps(mine)[0].Partition
	require.True(t, f.c.TxnPending("g", topic, part))
	require.True(t, f.c.TxnPending("g", "payments", 0))
	require.False(t, f.c.TxnPending("g", "orders", 9))
	_, ok := f.c.CommittedOffset("g", topic, part)
	require.False(t, ok, "staged, not committed")
	staged := f.c.TxnStaged("g", 7)
	require.Len(t, staged, 1)
	require.Equal(t, int64(10), staged[0].Offset)
	views := f.c.TxnStagedViews()
	require.Len(t, views, 2)
	require.Equal(t, []int64{7, 8}, []int64{views[0].ProducerID, views[1].ProducerID})

	require.NoError(t, f.c.EndTxnOffsets("g", 7, staged, true))
	e, ok := f.c.CommittedOffset("g", topic, part)
	require.True(t, ok)
	require.Equal(t, int64(10), e.Offset)
	require.False(t, f.c.TxnPending("g", topic, part))
	require.NoError(t, f.c.EndTxnOffsets("g", 8, nil, false))
	require.False(t, f.c.TxnPending("g", "payments", 0))
	_, ok = f.c.CommittedOffset("g", "payments", 0)
	require.False(t, ok, "the abort discarded it")
	require.Empty(t, f.c.TxnStagedViews())
}

func TestStageTxnCommitConsumerGroupEpochs(t *testing.T) {
	f := newFixture(t)
	r := f.consumerJoin("k", "m", "payments")
	r, err := f.consumerBeat("k", "m", r.MemberEpoch)
	require.NoError(t, err)
	req := CommitRequest{Group: "k", MemberID: "m", Generation: r.MemberEpoch - 1, Entries: entries("payments-0")}
	require.ErrorIs(t, f.c.StageTxnCommit(1, req), ErrStaleMemberEpoch)
	req.Generation = r.MemberEpoch
	require.NoError(t, f.c.StageTxnCommit(1, req))
}

func TestEndTxnOffsetsFailureKeepsThemStaged(t *testing.T) {
	store := &failingStore{Memory: offsets.NewMemory(), failCommits: true}
	f := newFixtureWith(t, Config{Store: store})
	require.NoError(t, f.c.StageTxnCommit(3, CommitRequest{Group: "g", Generation: -1, Entries: entries("orders-1")}))
	require.ErrorIs(t, f.c.EndTxnOffsets("g", 3, f.c.TxnStaged("g", 3), true), offsets.ErrStorage)
	require.True(t, f.c.TxnPending("g", "orders", 1), "still staged: the retry commits it")
	store.failCommits = false
	require.NoError(t, f.c.EndTxnOffsets("g", 3, f.c.TxnStaged("g", 3), true))
	require.False(t, f.c.TxnPending("g", "orders", 1))
}

func TestOnExpireRunsInTheExpiryStep(t *testing.T) {
	f := newFixture(t)
	n := 0
	f.c.OnExpire(func() { n++ })
	f.c.Expire()
	f.c.ExpireStep()
	require.Equal(t, 2, n)
	require.NoError(t, f.c.CheckGroupID("g"))
	require.ErrorIs(t, f.c.CheckGroupID(strings.Repeat("g", 300)), ErrInvalidGroupID)
}

// TestTxnPendingKeys: the partitions any transaction holds staged offsets
// for, over every producer of the group; a partition leaves the set only
// when its last producer's EndTxnOffsets returns, by then with its
// committed offset applied.
func TestTxnPendingKeys(t *testing.T) {
	f := newFixture(t)
	require.Nil(t, f.c.TxnPendingKeys("g"))
	require.NoError(t, f.c.StageTxnCommit(7, CommitRequest{Group: "g", Generation: -1, Entries: entries("orders-1")}))
	require.NoError(t, f.c.StageTxnCommit(8, CommitRequest{Group: "g", Generation: -1, Entries: entries("orders-1", "orders-2")}))
	require.NoError(t, f.c.StageTxnCommit(9, CommitRequest{Group: "h", Generation: -1, Entries: entries("orders-3")}))
	o1, o2 := offsets.Key{Topic: "orders", Partition: 1}, offsets.Key{Topic: "orders", Partition: 2}
	require.Equal(t, map[offsets.Key]bool{o1: true, o2: true}, f.c.TxnPendingKeys("g"))
	require.NoError(t, f.c.EndTxnOffsets("g", 7, f.c.TxnStaged("g", 7), true))
	require.Equal(t, map[offsets.Key]bool{o1: true, o2: true}, f.c.TxnPendingKeys("g"), "8 still holds both")
	e, ok := f.c.CommittedOffset("g", "orders", 1)
	require.True(t, ok)
	require.Equal(t, int64(10), e.Offset)
	require.NoError(t, f.c.EndTxnOffsets("g", 8, f.c.TxnStaged("g", 8), true))
	require.Nil(t, f.c.TxnPendingKeys("g"))
	e, ok = f.c.CommittedOffset("g", "orders", 2)
	require.True(t, ok)
	require.Equal(t, int64(20), e.Offset)
	require.Equal(t, map[offsets.Key]bool{{Topic: "orders", Partition: 3}: true}, f.c.TxnPendingKeys("h"))
}

// TestStageTxnCommitChecksTheGroupLimit: a TxnOffsetCommit that would
// create a group past MaxGroups is refused when it is staged, staging
// nothing; the commit of offsets already staged (or replayed by a
// restart) is never refused by the limit, even once the group count is
// at it.
func TestStageTxnCommitChecksTheGroupLimit(t *testing.T) {
	f := newFixtureWith(t, Config{Settings: Settings{MaxGroups: 1}})
	require.NoError(t, f.c.CommitDirect("full", entries("orders-0")))
	err := f.c.StageTxnCommit(7, CommitRequest{Group: "new", Generation: -1, Entries: entries("orders-1")})
	require.ErrorIs(t, err, ErrTooManyGroups)
	require.Empty(t, f.c.TxnStaged("new", 7), "nothing staged")
	require.NoError(t, f.c.StageTxnCommit(7, CommitRequest{Group: "full", Generation: -1, Entries: entries("orders-1")}), "a known group")

	// A decided commit for a group the count no longer holds (deleted
	// since, or replayed at a restart) completes.
	require.NoError(t, f.c.EndTxnOffsets("replayed", 9, entries("orders-2"), true))
	e, ok := f.c.CommittedOffset("replayed", "orders", 2)
	require.True(t, ok)
	require.Equal(t, int64(10), e.Offset)
}
