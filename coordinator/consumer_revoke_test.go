package coordinator

import (
	"maps"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/minibroker/minibroker/assignor"
)

// toldPartitions is the partitions of m's last answer, sorted.
func (m *member) toldPartitions() []assignor.TopicPartition {
	return slices.SortedFunc(maps.Keys(m.told), assignor.TopicPartition.Compare)
}

// TestConsumerRegainedPartitionIsRevokedFirst: m2 holds payments-0 at
// epoch 1; m1 joins and the target hands it to m1 (epoch 2), which
// takes it at once; m1 leaves (epoch 3) and the target gives it back to
// m2. m2's next heartbeat, at epoch 1, answers its epoch 1 with the
// assignment it holds now, empty (the revocation step), and a
// transactional commit of payments-0 at epoch 1 is not the owner's; the
// heartbeat after moves it to epoch 3 with payments-0, and the commit at
// epoch 3 is staged.
func TestConsumerRegainedPartitionIsRevokedFirst(t *testing.T) {
	f := newFixture(t)
	a := f.consumerJoin("k", "m2", "payments")
	require.Equal(t, int32(1), a.MemberEpoch)
	require.Equal(t, []string{"payments-0"}, names(a.Assignment))
	b := f.consumerJoin("k", "m1", "payments")
	require.Equal(t, int32(2), b.MemberEpoch)
	require.Equal(t, []string{"payments-0"}, names(b.Assignment), "the target gives it to m1 at once")
	_, err := f.c.ConsumerHeartbeat(ConsumerHeartbeatRequest{Group: "k", MemberID: "m1", MemberEpoch: LeaveEpoch})
	require.NoError(t, err)

	r, err := f.consumerBeat("k", "m2", 1)
	require.NoError(t, err)
	require.Equal(t, int32(1), r.MemberEpoch, "the revocation step keeps the member's epoch")
	require.Empty(t, r.Assignment)
	require.True(t, r.Changed)
	commit := func(epoch int32) error {
		return f.c.StageTxnCommit(5, CommitRequest{Group: "k", MemberID: "m2", Generation: epoch, Entries: entries("payments-0")})
	}
	require.ErrorIs(t, commit(1), ErrNotPartitionOwner)

	r, err = f.consumerBeat("k", "m2", 1)
	require.NoError(t, err)
	require.Equal(t, int32(3), r.MemberEpoch)
	require.Equal(t, []string{"payments-0"}, names(r.Assignment))
	require.True(t, r.Changed)
	require.ErrorIs(t, commit(1), ErrStaleMemberEpoch)
	require.NoError(t, commit(3))
	r, err = f.consumerBeat("k", "m2", 3)
	require.NoError(t, err)
	require.Equal(t, int32(3), r.MemberEpoch)
	require.False(t, r.Changed)
}

// TestConsumerKeptPartitionNoRevocationStep: a partition no other member
// was handed in between needs no revocation step: m2 keeps payments-0
// while m1 joins for orders only, and its next heartbeat moves it
// straight to epoch 2, where it still holds payments-0 and was told so.
func TestConsumerKeptPartitionNoRevocationStep(t *testing.T) {
	f := newFixture(t)
	f.consumerJoin("k", "m2", "payments")
	b := f.consumerJoin("k", "m1", "orders")
	require.Equal(t, int32(2), b.MemberEpoch)
	r, err := f.consumerBeat("k", "m2", 1)
	require.NoError(t, err)
	require.Equal(t, int32(2), r.MemberEpoch)
	require.Equal(t, []string{"payments-0"}, names(r.Assignment))
	require.Equal(t, []string{"payments-0"}, names(f.c.groups["k"].members["m2"].toldPartitions()))
}

// TestGrantCounts: a partition's grant count moves when a heartbeat
// hands it to a member that did not hold it, not when its holder keeps
// it; a member is told each partition at the count of its answer.
func TestGrantCounts(t *testing.T) {
	f := newFixture(t)
	f.consumerJoin("k", "m2", "payments")
	g := f.c.groups["k"]
	p0 := tps("payments-0")[0]
	require.Equal(t, int64(1), g.grants[p0])
	require.Equal(t, int64(1), g.members["m2"].told[p0])
	f.consumerJoin("k", "m1", "payments")
	require.Equal(t, int64(2), g.grants[p0])
	require.Equal(t, int64(2), g.members["m1"].told[p0])
	require.Equal(t, int64(1), g.members["m2"].told[p0], "m2 has not heard since")
	r, err := f.consumerBeat("k", "m1", 2)
	require.NoError(t, err)
	require.Equal(t, []string{"payments-0"}, names(r.Assignment))
	require.Equal(t, int64(2), g.grants[p0], "kept: no new grant")
}
