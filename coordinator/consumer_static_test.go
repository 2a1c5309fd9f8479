package coordinator

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// staticConsumerPair joins static member "u1" (instance "a") and dynamic
// member "d" over orders(4), both caught up at group epoch 2.
func staticConsumerPair(f *fixture) {
	f.t.Helper()
	_, err := f.staticConsumerJoin("g", "u1", "a", "orders")
	require.NoError(f.t, err)
	f.consumerJoin("g", "d", "orders")
	_, err = f.staticConsumerBeat("g", "u1", "a", 1)
	require.NoError(f.t, err)
	require.Equal(f.t, []string{"orders-0", "orders-2"}, names(f.member("g", "u1").Assignment))
	require.Equal(f.t, []string{"orders-1", "orders-3"}, names(f.member("g", "d").Assignment))
}

func TestConsumerStaticTemporaryLeaveKeepsAssignmentAndTakeoverKeepsGroupEpoch(t *testing.T) {
	t.Parallel()
	f, seen := recordRebalances(t, Config{})
	staticConsumerPair(f)

	res, err := f.staticConsumerBeat("g", "u1", "a", StaticLeaveEpoch)
	require.NoError(t, err)
	require.Equal(t, StaticLeaveEpoch, res.MemberEpoch, "the answer carries -2")
	away := f.member("g", "u1")
	require.Equal(t, StaticLeaveEpoch, away.MemberEpoch, "still listed")
	require.Equal(t, "a", away.InstanceID)
	require.Equal(t, []string{"orders-0", "orders-2"}, names(away.Assignment), "its assignment held")
	state, epoch := f.state("g")
	require.Equal(t, Stable, state)
	require.Equal(t, int32(2), epoch, "a temporary leave is no new group epoch")

	res, err = f.staticConsumerJoin("g", "u2", "a", "orders")
	require.NoError(t, err)
	require.Equal(t, "u2", res.MemberID)
	require.Equal(t, int32(2), res.MemberEpoch, "the takeover is at the same group epoch")
	require.Equal(t, []string{"orders-0", "orders-2"}, names(res.Assignment))
	require.Equal(t, []string{"orders-1", "orders-3"}, names(f.member("g", "d").Assignment), "nobody else moved")
	v, _ := f.c.Describe("g")
	require.Len(t, v.Members, 2)
	last := seen()[len(seen())-1]
	require.Equal(t, ReasonStaticRestart, last.Reason)
	require.Equal(t, int32(2), last.Generation)
	require.Equal(t, "u1", last.Replaced)
	require.Equal(t, "u2", last.ReplacedBy)

	_, err = f.staticConsumerBeat("g", "u1", "a", 2)
	require.ErrorIs(t, err, ErrFencedInstanceID, "the replaced member id naming the instance")
	_, err = f.consumerBeat("g", "u1", 2)
	require.ErrorIs(t, err, ErrUnknownMemberID, "the replaced member id alone")
	err = f.c.CommitMember(CommitRequest{Group: "g", MemberID: "u1", Generation: 2, Entries: entries("orders-0")})
	require.ErrorIs(t, err, ErrUnknownMemberID)
	require.NoError(t, f.c.CommitMember(CommitRequest{Group: "g", MemberID: "u2", Generation: 2, Entries: entries("orders-0")}))
}

func TestConsumerStaticInstanceHeldByLiveMemberIsUnreleased(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	staticConsumerPair(f)
	_, err := f.staticConsumerJoin("g", "u2", "a", "orders")
	require.ErrorIs(t, err, ErrUnreleasedInstanceID)
	_, epoch := f.state("g")
	require.Equal(t, int32(2), epoch)
	v, _ := f.c.Describe("g")
	require.Len(t, v.Members, 2, "the second incarnation is not in")

	res, err := f.staticConsumerJoin("g", "u1", "a", "orders")
	require.NoError(t, err, "the holder itself re-joins")
	require.Equal(t, int32(2), res.MemberEpoch)
}

func TestConsumerStaticTemporaryLeaveEndsWithTheSession(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	staticConsumerPair(f)
	_, err := f.staticConsumerBeat("g", "u1", "a", StaticLeaveEpoch)
	require.NoError(t, err)
	f.advance(int(DefaultConsumerSessionTimeout / scale))
	_, err = f.consumerBeat("g", "d", 2)
	require.NoError(t, err)
	require.Empty(t, f.c.Expire(), "at its deadline it still holds its place")
	f.advance(1)
	require.Equal(t, []Expired{{Group: "g", MemberID: "u1"}}, f.c.Expire())
	_, epoch := f.state("g")
	require.Equal(t, int32(3), epoch)
	res, err := f.staticConsumerJoin("g", "u2", "a", "orders")
	require.NoError(t, err)
	require.Equal(t, int32(4), res.MemberEpoch, "after its session ended the instance joins as a new member")
}

func TestConsumerStaticIdentityErrors(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	staticConsumerPair(f)
	_, err := f.staticConsumerBeat("g", "u1", "ghost", 2)
	require.ErrorIs(t, err, ErrUnknownMemberID, "an instance nobody holds")
	_, err = f.staticConsumerBeat("g", "d", "a", 2)
	require.ErrorIs(t, err, ErrFencedInstanceID, "another member's instance")
	_, err = f.staticConsumerBeat("g", "d", "a", StaticLeaveEpoch)
	require.ErrorIs(t, err, ErrFencedInstanceID)
	_, err = f.staticConsumerBeat("g", "x", "ghost", LeaveEpoch)
	require.NoError(t, err, "a leave of nobody is a no-op")
	_, err = f.staticConsumerBeat("g", "u1", "a", LeaveEpoch)
	require.NoError(t, err, "a full leave")
	_, epoch := f.state("g")
	require.Equal(t, int32(3), epoch)
}

func TestConsumerAssignorSortsStaticMembersByInstanceID(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.consumerJoin("g", "a", "orders")
	_, err := f.staticConsumerJoin("g", "z", "z", "orders")
	require.NoError(t, err)
	v, _ := f.c.Describe("g")
	require.Equal(t, []string{"orders-0", "orders-2"}, names(v.Members[1].TargetAssignment), "static z first")
	require.Equal(t, []string{"orders-1", "orders-3"}, names(v.Members[0].TargetAssignment))
}
