package coordinator

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/minibroker/minibroker/catalog"
)

func TestConsumerJoinGetsWholeAssignmentAtGroupEpoch(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	res := f.consumerJoin("g", "a", "orders")
	require.Equal(t, "a", res.MemberID)
	require.Equal(t, int32(1), res.MemberEpoch)
	require.True(t, res.Changed)
	require.Equal(t, DefaultConsumerHeartbeatInterval, res.HeartbeatInterval)
	require.Equal(t, []string{"orders-0", "orders-1", "orders-2", "orders-3"}, names(res.Assignment))
	v, _ := f.c.Describe("g")
	require.Equal(t, ConsumerGroup, v.Type)
	require.Equal(t, Stable, v.State)
	require.Equal(t, int32(1), v.Generation)
}

// TestConsumerLaggingMemberGetsWholeNewAssignmentAtItsHeartbeat is the
// chapter's lab over KIP-848: the second join bumps the group epoch and
// computes the whole target; the first member holds what it keeps of its
// old assignment at its old epoch until its own heartbeat hands it the
// rest (no revocation step).
func TestConsumerLaggingMemberGetsWholeNewAssignmentAtItsHeartbeat(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.consumerJoin("g", "member-1", "orders")
	second := f.consumerJoin("g", "member-2", "orders")
	require.Equal(t, int32(2), second.MemberEpoch, "the joiner is at the group epoch at once")
	require.Equal(t, []string{"orders-1", "orders-3"}, names(second.Assignment))

	first := f.member("g", "member-1")
	require.Equal(t, int32(1), first.MemberEpoch)
	require.Equal(t, []string{"orders-0", "orders-2"}, names(first.Assignment), "orders-1 and orders-3 left it with the new target")
	require.Equal(t, []string{"orders-0", "orders-2"}, names(first.TargetAssignment))
	state, epoch := f.state("g")
	require.Equal(t, Reconciling, state)
	require.Equal(t, int32(2), epoch)

	res, err := f.consumerBeat("g", "member-1", 1)
	require.NoError(t, err)
	require.Equal(t, int32(2), res.MemberEpoch)
	require.True(t, res.Changed)
	require.Equal(t, []string{"orders-0", "orders-2"}, names(res.Assignment))
	state, _ = f.state("g")
	require.Equal(t, Stable, state)

	res, err = f.consumerBeat("g", "member-1", 2)
	require.NoError(t, err)
	require.False(t, res.Changed, "nothing moved")
	require.Equal(t, int32(2), res.MemberEpoch)
}

// TestConsumerLaggingMemberGainsPartitionsOnlyAtItsHeartbeat: after a
// leave, the remaining member's target grows, but it holds only its old
// partitions until its heartbeat moves it to the group epoch.
func TestConsumerLaggingMemberGainsPartitionsOnlyAtItsHeartbeat(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.consumerJoin("g", "a", "orders")
	f.consumerJoin("g", "b", "orders")
	_, err := f.consumerBeat("g", "a", 1)
	require.NoError(t, err)
	_, err = f.c.ConsumerHeartbeat(ConsumerHeartbeatRequest{Group: "g", MemberID: "b", MemberEpoch: LeaveEpoch})
	require.NoError(t, err)

	a := f.member("g", "a")
	require.Equal(t, int32(2), a.MemberEpoch)
	require.Equal(t, []string{"orders-0", "orders-2"}, names(a.Assignment))
	require.Equal(t, []string{"orders-0", "orders-1", "orders-2", "orders-3"}, names(a.TargetAssignment))
	res, err := f.consumerBeat("g", "a", 2)
	require.NoError(t, err)
	require.Equal(t, int32(3), res.MemberEpoch)
	require.Equal(t, []string{"orders-0", "orders-1", "orders-2", "orders-3"}, names(res.Assignment))
}

func TestConsumerHeartbeatStrictFencing(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.consumerJoin("g", "a", "orders")
	f.consumerJoin("g", "b", "orders")
	_, err := f.consumerBeat("g", "a", 1)
	require.NoError(t, err) // a is now at epoch 2, its previous epoch 1
	deadline := f.member("g", "a").Deadline
	f.advance(1000)

	cases := []struct {
		name  string
		epoch int32
	}{
		{"an epoch ahead of the member's", 3},
		{"an epoch behind the member's", 1},
		{"a negative epoch that is no leave", -3},
	}
	for _, tc := range cases {
		_, err := f.consumerBeat("g", "a", tc.epoch)
		require.ErrorIs(t, err, ErrFencedMemberEpoch, tc.name)
	}
	// Kafka accepts the previous epoch when the owned partitions are a
	// subset of the assignment (a lost response); here it is fenced too.
	req := consumerReq("g", "a", 1, "orders")
	_, err = f.c.ConsumerHeartbeat(req)
	require.ErrorIs(t, err, ErrFencedMemberEpoch, "no previous-epoch grace")
	require.Equal(t, deadline, f.member("g", "a").Deadline, "a fenced heartbeat renews nothing")
	_, epoch := f.state("g")
	require.Equal(t, int32(2), epoch)
}

func TestConsumerHeartbeatUnknownMember(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	_, err := f.consumerBeat("nope", "a", 1)
	require.ErrorIs(t, err, ErrUnknownMemberID, "the chapter collapses an unknown group with an unknown member")
	f.consumerJoin("g", "a", "orders")
	_, err = f.consumerBeat("g", "b", 1)
	require.ErrorIs(t, err, ErrUnknownMemberID)
}

// TestConsumerRejoinIsRefreshUnlessSubscriptionChanged: kgo re-joins with
// epoch 0 and its id after FENCED_MEMBER_EPOCH; unchanged, that is section
// 4's refresh (no new group epoch), changed it is a subscription change.
func TestConsumerRejoinIsRefreshUnlessSubscriptionChanged(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.consumerJoin("g", "a", "orders")
	f.consumerJoin("g", "b", "orders")

	res := f.consumerJoin("g", "a", "orders")
	require.Equal(t, int32(2), res.MemberEpoch, "no new group epoch; a moves to the current one")
	require.Equal(t, []string{"orders-0", "orders-2"}, names(res.Assignment))
	_, epoch := f.state("g")
	require.Equal(t, int32(2), epoch)

	res = f.consumerJoin("g", "a", "orders", "payments")
	require.Equal(t, int32(3), res.MemberEpoch)
	require.Equal(t, []string{"orders-0", "orders-2", "payments-0"}, names(res.Assignment))
}

func TestConsumerSubscriptionChangeOnHeartbeatRebalances(t *testing.T) {
	t.Parallel()
	var seen []Rebalance
	f := newFixtureWith(t, Config{OnRebalance: func(r Rebalance) { seen = append(seen, r) }})
	f.consumerJoin("g", "a", "orders")

	res, err := f.c.ConsumerHeartbeat(consumerReq("g", "a", 1, "orders"))
	require.NoError(t, err)
	require.Equal(t, int32(1), res.MemberEpoch, "the same subscription repeated changes nothing")
	res, err = f.c.ConsumerHeartbeat(consumerReq("g", "a", 1, "payments"))
	require.NoError(t, err)
	require.Equal(t, int32(2), res.MemberEpoch)
	require.True(t, res.Changed)
	require.Equal(t, []string{"payments-0"}, names(res.Assignment))
	res, err = f.c.ConsumerHeartbeat(consumerReq("g", "a", 2))
	require.NoError(t, err)
	require.Equal(t, int32(3), res.MemberEpoch, "an empty subscription is a subscription too")
	require.Empty(t, res.Assignment)

	require.Len(t, seen, 3)
	require.Equal(t, []Reason{ReasonJoin, ReasonSubscription, ReasonSubscription}, []Reason{seen[0].Reason, seen[1].Reason, seen[2].Reason})
	require.Equal(t, Stable, seen[1].State, "the only member caught up in the same heartbeat")
}

// TestConsumerSubscriptionToUnknownTopicAssignedOnceItExists: Kafka's rule,
// not the chapter's (which rejects unknown topics at join): kgo subscribes
// to every topic it was told to consume, found or not.
func TestConsumerSubscriptionToUnknownTopicAssignedOnceItExists(t *testing.T) {
	t.Parallel()
	cat, err := catalog.Open(catalog.Config{})
	require.NoError(t, err)
	_, err = cat.Create("orders", 2)
	require.NoError(t, err)
	f := newFixtureWith(t, Config{Topics: cat})
	res := f.consumerJoin("g", "a", "orders", "later")
	require.Equal(t, []string{"orders-0", "orders-1"}, names(res.Assignment))
	require.Equal(t, []string{"later", "orders"}, f.member("g", "a").Topics)

	res, err = f.consumerBeat("g", "a", 1)
	require.NoError(t, err)
	require.False(t, res.Changed)
	_, err = cat.Create("later", 1)
	require.NoError(t, err)
	res, err = f.consumerBeat("g", "a", 1)
	require.NoError(t, err)
	require.Equal(t, int32(2), res.MemberEpoch, "the new topic bumps the group epoch at the next heartbeat")
	require.Equal(t, []string{"later-0", "orders-0", "orders-1"}, names(res.Assignment))

	_, err = f.c.ConsumerHeartbeat(consumerReq("g", "b", JoinEpoch, "no/such"))
	require.ErrorIs(t, err, catalog.ErrInvalidTopic, "a name that cannot be a topic is still refused")
}

func TestConsumerLeave(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.consumerJoin("g", "a", "orders")
	f.consumerJoin("g", "b", "orders")
	f.consumerJoin("g", "c", "orders")

	res, err := f.c.ConsumerHeartbeat(ConsumerHeartbeatRequest{Group: "g", MemberID: "c", MemberEpoch: LeaveEpoch})
	require.NoError(t, err)
	require.Equal(t, LeaveEpoch, res.MemberEpoch)
	_, epoch := f.state("g")
	require.Equal(t, int32(4), epoch)

	// -2 is a static member's temporary leave (consumer_static_test.go):
	// without an instance id it is refused, and b then leaves with -1.
	_, err = f.c.ConsumerHeartbeat(ConsumerHeartbeatRequest{Group: "g", MemberID: "b", MemberEpoch: StaticLeaveEpoch})
	require.ErrorIs(t, err, ErrInvalidMemberID)
	_, epoch = f.state("g")
	require.Equal(t, int32(4), epoch)
	res, err = f.c.ConsumerHeartbeat(ConsumerHeartbeatRequest{Group: "g", MemberID: "b", MemberEpoch: LeaveEpoch})
	require.NoError(t, err)
	require.Equal(t, LeaveEpoch, res.MemberEpoch)
	_, epoch = f.state("g")
	require.Equal(t, int32(5), epoch)
	_, err = f.consumerBeat("g", "b", 2)
	require.ErrorIs(t, err, ErrUnknownMemberID)

	// The chapter's leave is idempotent (Kafka: UNKNOWN_MEMBER_ID).
	for _, who := range [][2]string{{"g", "b"}, {"g", "nobody"}, {"nope", "a"}} {
		_, err = f.c.ConsumerHeartbeat(ConsumerHeartbeatRequest{Group: who[0], MemberID: who[1], MemberEpoch: LeaveEpoch})
		require.NoError(t, err, "%v", who)
	}
	_, epoch = f.state("g")
	require.Equal(t, int32(5), epoch, "leaves of nobody start no epoch")

	_, err = f.c.ConsumerHeartbeat(ConsumerHeartbeatRequest{Group: "g", MemberID: "a", MemberEpoch: LeaveEpoch})
	require.NoError(t, err)
	state, epoch := f.state("g")
	require.Equal(t, Empty, state)
	require.Equal(t, int32(6), epoch)
}

func TestConsumerAssignorSelection(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name      string
		assignors []*string // of members a and b
		want      string
		a, b      []string
	}{
		{"no preference is the server default, round-robin", []*string{nil, nil}, UniformAssignor,
			[]string{"orders-0", "orders-2"}, []string{"orders-1", "orders-3"}},
		{"empty is the server default", []*string{ptr(""), ptr("")}, UniformAssignor,
			[]string{"orders-0", "orders-2"}, []string{"orders-1", "orders-3"}},
		{"uniform is the chapter's round-robin", []*string{ptr(UniformAssignor), ptr(UniformAssignor)}, UniformAssignor,
			[]string{"orders-0", "orders-2"}, []string{"orders-1", "orders-3"}},
		{"range is Kafka's range", []*string{ptr(RangeAssignor), ptr(RangeAssignor)}, RangeAssignor,
			[]string{"orders-0", "orders-1"}, []string{"orders-2", "orders-3"}},
		{"a member's preference beats none", []*string{nil, ptr(RangeAssignor)}, RangeAssignor,
			[]string{"orders-0", "orders-1"}, []string{"orders-2", "orders-3"}},
		{"a tie goes to the name that sorts first", []*string{ptr(UniformAssignor), ptr(RangeAssignor)}, RangeAssignor,
			[]string{"orders-0", "orders-1"}, []string{"orders-2", "orders-3"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			for i, id := range []string{"a", "b"} {
				req := consumerReq("g", id, JoinEpoch, "orders")
				req.Assignor = tc.assignors[i]
				_, err := f.c.ConsumerHeartbeat(req)
				require.NoError(t, err)
			}
			_, err := f.consumerBeat("g", "a", 1)
			require.NoError(t, err)
			v, _ := f.c.Describe("g")
			require.Equal(t, tc.want, v.Assignor)
			require.Equal(t, tc.a, names(f.member("g", "a").Assignment))
			require.Equal(t, tc.b, names(f.member("g", "b").Assignment))
		})
	}
}

func TestConsumerUnsupportedAssignor(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	req := consumerReq("g", "a", JoinEpoch, "orders")
	req.Assignor = ptr("cooperative-sticky")
	_, err := f.c.ConsumerHeartbeat(req)
	require.ErrorIs(t, err, ErrUnsupportedAssignor)
	_, ok := f.c.Describe("g")
	require.False(t, ok, "a refused join creates no group")

	f.consumerJoin("g", "a", "orders")
	req = consumerReq("g", "a", 1, "orders")
	req.Assignor = ptr("sticky")
	_, err = f.c.ConsumerHeartbeat(req)
	require.ErrorIs(t, err, ErrUnsupportedAssignor, "on a later heartbeat too")

	req.Assignor = ptr(RangeAssignor)
	res, err := f.c.ConsumerHeartbeat(req)
	require.NoError(t, err)
	require.Equal(t, int32(2), res.MemberEpoch, "another assignor is a new target")
	v, _ := f.c.Describe("g")
	require.Equal(t, RangeAssignor, v.Assignor)
}

func TestConsumerMemberIDs(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	_, err := f.c.ConsumerHeartbeat(consumerReq("g", "", JoinEpoch, "orders"))
	require.ErrorIs(t, err, ErrInvalidMemberID, "v1: the client makes its id")

	req := consumerReq("g", "", JoinEpoch, "orders")
	req.GenerateMemberID = true // v0
	res, err := f.c.ConsumerHeartbeat(req)
	require.NoError(t, err)
	require.Equal(t, "kgo-000001", res.MemberID, "the classic members' style, so ids sort in join order")
	_, err = f.c.ConsumerHeartbeat(ConsumerHeartbeatRequest{Group: "g", MemberEpoch: 1, GenerateMemberID: true})
	require.ErrorIs(t, err, ErrInvalidMemberID, "only a join may leave the id to the broker")
	_, err = f.consumerBeat("g", res.MemberID, 1)
	require.NoError(t, err)
}

// TestConsumerHeartbeatRefusesClassicGroupWithMembers: a group is of one
// type at a time (Kafka with its migration policy off).
func TestConsumerHeartbeatRefusesClassicGroupWithMembers(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.join("g", "a", "orders")
	for _, epoch := range []int32{JoinEpoch, 1, LeaveEpoch} {
		_, err := f.c.ConsumerHeartbeat(consumerReq("g", "a", epoch, "orders"))
		require.ErrorIs(t, err, ErrGroupIDNotFound, "epoch %d", epoch)
	}
	v, _ := f.c.Describe("g")
	require.Equal(t, ClassicGroup, v.Type)
	require.Equal(t, int32(1), v.Generation)
}

// TestConsumerJoinTakesEmptyClassicGroup: an Empty group takes the type of
// its next join, and its generation carries on as the group epoch.
func TestConsumerJoinTakesEmptyClassicGroup(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.join("g", "a", "orders")
	f.c.Leave("g", "a")
	_, err := f.consumerBeat("g", "a", 2)
	require.ErrorIs(t, err, ErrUnknownMemberID, "only a join changes the type")

	res := f.consumerJoin("g", "b", "orders")
	require.Equal(t, int32(3), res.MemberEpoch)
	v, _ := f.c.Describe("g")
	require.Equal(t, ConsumerGroup, v.Type)
	require.Equal(t, int32(3), v.Generation)
}

// TestConsumerJoinTakesGroupWithOnlyPendingIDs: a classic group whose only
// trace is a MEMBER_ID_REQUIRED id has no members, so a consumer join takes
// it; the pending id is forgotten and its join refused.
func TestConsumerJoinTakesGroupWithOnlyPendingIDs(t *testing.T) {
	t.Parallel()
	f := newFixtureWith(t, Config{Settings: Settings{MaxGroupSize: 1}})
	res, err := f.c.Join(wireJoin("g", "", roundrobin("orders")))
	require.ErrorIs(t, err, ErrMemberIDRequired)
	f.consumerJoin("g", "a", "orders")
	_, err = f.c.Join(wireJoin("g", res.MemberID, roundrobin("orders")))
	require.ErrorIs(t, err, ErrInconsistentGroupProtocol)
}

func TestConsumerJoinLimits(t *testing.T) {
	t.Parallel()
	f := newFixtureWith(t, Config{Settings: Settings{MaxGroupSize: 2, MaxGroups: 1}})
	f.consumerJoin("g", "a", "orders")
	f.consumerJoin("g", "b", "orders")
	_, err := f.c.ConsumerHeartbeat(consumerReq("g", "c", JoinEpoch, "orders"))
	require.ErrorIs(t, err, ErrGroupMaxSizeReached)
	f.consumerJoin("g", "b", "orders") // a re-join takes no new place
	_, err = f.c.ConsumerHeartbeat(consumerReq("h", "a", JoinEpoch, "orders"))
	require.ErrorIs(t, err, ErrTooManyGroups)
	_, epoch := f.state("g")
	require.Equal(t, int32(2), epoch, "refused joins start no epoch")
}
