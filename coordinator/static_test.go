package coordinator

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestStaticMemberJoinsAtOnceUnderInstanceID(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	res, err := f.c.Join(staticJoin("g", "", "billing-1", roundrobin("orders")))
	require.NoError(t, err, "no MEMBER_ID_REQUIRED for a static member")
	require.Equal(t, "billing-1-000001", res.MemberID)
	require.Equal(t, int32(1), res.Generation)
	require.True(t, res.Rebalanced)
	require.Equal(t, []string{"orders-0", "orders-1", "orders-2", "orders-3"}, names(res.Assignment))
	require.Equal(t, "billing-1", f.member("g", "billing-1-000001").InstanceID)
}

// staticPair joins static member "a" (instance "a") and dynamic member
// "kgo-000003" to g over orders(4): generation 2.
func staticPair(f *fixture) (static, dynamic string) {
	f.t.Helper()
	static = f.mustJoin(staticJoin("g", "", "a", roundrobin("orders"))).MemberID
	_, err := f.c.Join(wireJoin("g", "", roundrobin("orders")))
	require.ErrorIs(f.t, err, ErrMemberIDRequired)
	dynamic = f.mustJoin(wireJoin("g", "kgo-000002", roundrobin("orders"))).MemberID
	return static, dynamic
}

func TestStaticRestartTakesOldAssignmentWithoutNewGeneration(t *testing.T) {
	t.Parallel()
	f, seen := recordRebalances(t, Config{})
	old, dyn := staticPair(f)
	require.Equal(t, "a-000001", old)
	require.Equal(t, []string{"orders-0", "orders-2"}, names(f.member("g", old).Assignment))
	require.Equal(t, []string{"orders-1", "orders-3"}, names(f.member("g", dyn).Assignment))

	res := f.mustJoin(staticJoin("g", "", "a", roundrobin("orders")))
	require.Equal(t, "a-000003", res.MemberID, "a restart gets a new member id")
	require.Equal(t, int32(2), res.Generation, "and no new generation")
	require.False(t, res.Rebalanced)
	require.Equal(t, []string{"orders-0", "orders-2"}, names(res.Assignment))
	require.Equal(t, "a-000003", res.Leader, "the leadership moves with the place")

	sync, err := f.c.SyncInstance("g", "a-000003", "a", 2, "")
	require.NoError(t, err)
	require.Equal(t, []string{"orders-0", "orders-2"}, names(sync))
	require.Equal(t, []string{"orders-1", "orders-3"}, names(f.member("g", dyn).Assignment), "nobody else moves")
	_, gen := f.state("g")
	require.Equal(t, int32(2), gen)

	last := seen()[len(seen())-1]
	require.Equal(t, ReasonStaticRestart, last.Reason)
	require.Equal(t, int32(2), last.Generation)
	require.Equal(t, "a-000001", last.Replaced)
	require.Equal(t, "a-000003", last.ReplacedBy)
	require.Equal(t, []string{"a-000003", "kgo-000002"}, last.Members)
}

func TestStaticZombieIsFencedOnIdentityFirst(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	old, _ := staticPair(f)
	f.mustJoin(staticJoin("g", "", "a", roundrobin("orders")))

	cases := []struct {
		name       string
		instance   string
		generation int32
		want       error
	}{
		{"instance named, current generation", "a", 2, ErrFencedInstanceID},
		{"instance named, stale generation: identity is asked first", "a", 1, ErrFencedInstanceID},
		{"no instance, current generation: an unknown member", "", 2, ErrUnknownMemberID},
		{"no instance, stale generation: the chapter's order", "", 1, ErrIllegalGeneration},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			require.ErrorIs(t, f.c.HeartbeatInstance("g", old, tc.instance, tc.generation), tc.want, "heartbeat")
			err := f.c.CommitMember(CommitRequest{Group: "g", MemberID: old, InstanceID: tc.instance, Generation: tc.generation,
				Entries: entries("orders-0")})
			require.ErrorIs(t, err, tc.want, "commit")
		})
	}
	_, err := f.c.SyncInstance("g", old, "a", 2, "")
	require.ErrorIs(t, err, ErrFencedInstanceID, "sync")
	_, err = f.c.SyncInstance("g", old, "", 2, "")
	require.ErrorIs(t, err, ErrUnknownMemberID, "sync without the instance")
	_, err = f.c.Join(staticJoin("g", old, "a", roundrobin("orders")))
	require.ErrorIs(t, err, ErrFencedInstanceID, "a re-join under the old member id")
	_, ok := f.c.CommittedOffset("g", "orders", 0)
	require.False(t, ok, "no zombie commit landed")

	require.NoError(t, f.c.HeartbeatInstance("g", "a-000003", "a", 2))
	require.NoError(t, f.c.CommitMember(CommitRequest{Group: "g", MemberID: "a-000003", InstanceID: "a", Generation: 2,
		Entries: entries("orders-0")}))
	e, ok := f.c.CommittedOffset("g", "orders", 0)
	require.True(t, ok)
	require.Equal(t, int64(10), e.Offset)
}

func TestStaticRestartWithOtherSubscriptionIsNewGeneration(t *testing.T) {
	t.Parallel()
	f, seen := recordRebalances(t, Config{})
	staticPair(f)
	res := f.mustJoin(staticJoin("g", "", "a", roundrobin("orders", "payments")))
	require.Equal(t, "a-000003", res.MemberID)
	require.Equal(t, int32(3), res.Generation)
	require.True(t, res.Rebalanced)
	require.Equal(t, ReasonSubscription, seen()[len(seen())-1].Reason)
	require.ErrorIs(t, f.c.HeartbeatInstance("g", "a-000001", "a", 3), ErrFencedInstanceID)
	v, _ := f.c.Describe("g")
	require.Len(t, v.Members, 2, "the old member id is gone, not beside the new one")
}

func TestStaticJoinNamingAnotherMembersIDIsUnknown(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	_, dyn := staticPair(f)
	_, err := f.c.Join(staticJoin("g", dyn, "b", roundrobin("orders")))
	require.ErrorIs(t, err, ErrUnknownMemberID, "a dynamic member is no instance")
	_, err = f.c.Join(staticJoin("g", dyn, "a", roundrobin("orders")))
	require.ErrorIs(t, err, ErrFencedInstanceID, "instance a is another member")
}

func TestLeaveMembersByInstanceID(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	staticPair(f)
	left, errs := f.c.LeaveMembers("g", []LeaveMember{{MemberID: "a-000009", InstanceID: "a"}})
	require.Equal(t, []string{""}, left)
	require.ErrorIs(t, errs[0], ErrFencedInstanceID, "a member id the instance does not hold")
	_, gen := f.state("g")
	require.Equal(t, int32(2), gen, "a fenced leave leaves nothing")

	left, errs = f.c.LeaveMembers("g", []LeaveMember{{InstanceID: "a"}, {InstanceID: "ghost"}, {MemberID: "kgo-000002", InstanceID: "a"}})
	require.Equal(t, []string{"a-000001", "", ""}, left)
	require.NoError(t, errs[0])
	require.NoError(t, errs[1], "an unknown instance is a no-op, as any unknown member")
	require.ErrorIs(t, errs[2], ErrFencedInstanceID)
	state, gen := f.state("g")
	require.Equal(t, Stable, state)
	require.Equal(t, int32(3), gen, "one rebalance")
	require.Equal(t, []string{"orders-0", "orders-1", "orders-2", "orders-3"}, names(f.member("g", "kgo-000002").Assignment))
}

func TestStaticMemberKeepsPartitionsUntilSessionExpires(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	old, dyn := staticPair(f) // sessions of 1 s from time 0
	f.advance(500)
	require.NoError(t, f.c.Heartbeat("g", dyn, 2))
	f.advance(500)
	require.Empty(t, f.c.Expire(), "at its deadline the static member still holds its place")
	require.Equal(t, []string{"orders-0", "orders-2"}, names(f.member("g", old).Assignment))
	f.advance(1)
	require.Equal(t, []Expired{{Group: "g", MemberID: old}}, f.c.Expire())
	_, gen := f.state("g")
	require.Equal(t, int32(3), gen)

	res := f.mustJoin(staticJoin("g", "", "a", roundrobin("orders")))
	require.True(t, res.Rebalanced, "after expiry the instance joins as a new member")
	require.Equal(t, int32(4), res.Generation)
}

func TestAssignorSortsStaticMembersByInstanceIDBeforeDynamicOnes(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	dynReq := wireJoin("g", "", roundrobin("orders"))
	dynReq.RequireMemberID, dynReq.ClientID = false, "a"
	dyn := f.mustJoin(dynReq).MemberID
	f.mustJoin(staticJoin("g", "", "z", roundrobin("orders")))
	require.Equal(t, "a-000001", dyn)
	v, _ := f.c.Describe("g")
	require.Equal(t, "z-000002", v.Leader, "a static member sorts first, though its member id sorts last")
	require.Equal(t, []string{"orders-0", "orders-2"}, names(f.member("g", "z-000002").Assignment))

	for range 3 { // restarts never move a partition
		f.mustJoin(staticJoin("g", "", "z", roundrobin("orders")))
	}
	f.mustJoin(staticJoin("g", "", "m", roundrobin("orders"))) // a new generation: m, z, then a
	require.Equal(t, []string{"orders-0", "orders-3"}, names(f.member("g", "m-000006").Assignment))
	require.Equal(t, []string{"orders-1"}, names(f.member("g", "z-000005").Assignment))
	require.Equal(t, []string{"orders-2"}, names(f.member("g", dyn).Assignment))
}

func TestStaticRestartIsAdmittedInAFullGroup(t *testing.T) {
	t.Parallel()
	f := newFixtureWith(t, Config{Settings: Settings{MaxGroupSize: 1}})
	f.mustJoin(staticJoin("g", "", "a", roundrobin("orders")))
	res := f.mustJoin(staticJoin("g", "", "a", roundrobin("orders")))
	require.Equal(t, "a-000002", res.MemberID)
	_, err := f.c.Join(staticJoin("g", "", "b", roundrobin("orders")))
	require.ErrorIs(t, err, ErrGroupMaxSizeReached)
}

func TestInstanceIDLimits(t *testing.T) {
	t.Parallel()
	f := newFixtureWith(t, Config{Settings: Settings{MaxIDBytes: 8}})
	for _, id := range []string{"123456789", "a\x00b"} {
		_, err := f.c.Join(staticJoin("g", "", id, roundrobin("orders")))
		require.ErrorIs(t, err, ErrInvalidMemberID, "%q", id)
		req := consumerReq("c", "m", JoinEpoch, "orders")
		req.InstanceID = id
		_, err = f.c.ConsumerHeartbeat(req)
		require.ErrorIs(t, err, ErrInvalidMemberID, "%q", id)
	}
	res := f.mustJoin(staticJoin("g", "", "12345678", roundrobin("orders")))
	require.Equal(t, "12345678-000001", res.MemberID, "an instance id at the limit, and its member id within the member id limit")
	_, ok := f.c.Describe("c")
	require.False(t, ok)
}

// TestSortsBeforeIsAssignOrderKey: the leader choice's comparison is the
// assignor's order.
func TestSortsBeforeIsAssignOrderKey(t *testing.T) {
	t.Parallel()
	ms := []*member{{id: "a-1"}, {id: "z-2"}, {id: "b-3", instanceID: "b"}, {id: "a-4", instanceID: "a"}, {id: "0-5", instanceID: "c"}}
	for _, a := range ms {
		for _, b := range ms {
			require.Equal(t, a.assignOrderKey() < b.assignOrderKey(), a.sortsBefore(b), "%s before %s", a.id, b.id)
		}
	}
}
