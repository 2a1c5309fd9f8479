package coordinator

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestJoinRejoinWithSameIDReplacesSubscriptionAndBumpsGeneration(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.join("g", "a", "orders")
	f.join("g", "b", "orders")

	// The chapter bumps the generation on every join, even an identical one.
	res := f.join("g", "a", "orders")
	require.Equal(t, int32(3), res.Generation)
	require.True(t, res.Rebalanced)

	res = f.join("g", "a", "payments")
	require.Equal(t, int32(4), res.Generation)
	require.Equal(t, []string{"payments-0"}, names(res.Assignment))
	_, b, err := f.c.Assignment("g", "b")
	require.NoError(t, err)
	require.Equal(t, []string{"orders-0", "orders-1", "orders-2", "orders-3"}, names(b))
}

func TestJoinValidationOrder(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		req  JoinRequest
		want error
	}{
		{"empty group id before everything", JoinRequest{SessionTimeout: time.Hour, Topics: []string{"nope"}}, ErrInvalidGroupID},
		{"session below min", JoinRequest{Group: "g", MemberID: "a", SessionTimeout: 9 * time.Millisecond}, ErrInvalidSessionTimeout},
		{"session above max", JoinRequest{Group: "g", MemberID: "a", SessionTimeout: 31 * time.Minute}, ErrInvalidSessionTimeout},
		{"session checked before topics", JoinRequest{Group: "g", MemberID: "a", Topics: []string{"nope"}}, ErrInvalidSessionTimeout},
		{"chapter join needs a member id", JoinRequest{Group: "g", SessionTimeout: time.Second}, ErrInvalidMemberID},
		{"unknown topic", JoinRequest{Group: "g", MemberID: "a", SessionTimeout: time.Second, Topics: []string{"orders", "nope"}}, ErrUnknownTopic},
		{"unknown topic in a protocol", JoinRequest{Group: "g", SessionTimeout: time.Second, WireRules: true, ProtocolType: "consumer",
			Protocols: []Protocol{{Name: "range", Topics: []string{"nope"}}}}, ErrUnknownTopic},
		{"empty protocol name", JoinRequest{Group: "g", SessionTimeout: time.Second, WireRules: true, ProtocolType: "consumer",
			Protocols: []Protocol{{Name: "", Topics: []string{"orders"}}}}, ErrInconsistentGroupProtocol},
		{"protocol type other than consumer", JoinRequest{Group: "g", SessionTimeout: time.Second, WireRules: true, ProtocolType: "connect",
			Protocols: []Protocol{{Name: "range", Topics: []string{"orders"}}}}, ErrInconsistentGroupProtocol},
		{"no protocols", JoinRequest{Group: "g", SessionTimeout: time.Second, WireRules: true, ProtocolType: "consumer"}, ErrInconsistentGroupProtocol},
		{"protocol checked before topics", JoinRequest{Group: "g", SessionTimeout: time.Second, WireRules: true, ProtocolType: "connect",
			Protocols: []Protocol{{Name: "range", Topics: []string{"nope"}}}}, ErrInconsistentGroupProtocol},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			_, err := f.c.Join(tc.req)
			require.ErrorIs(t, err, tc.want)
			_, ok := f.c.Describe("g")
			require.False(t, ok, "a rejected join creates no group")
		})
	}
}

func TestJoinSessionBoundsAreInclusive(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.joinSession("g", "a", DefaultMinSessionTimeout, "orders")
	f.joinSession("g", "b", DefaultMaxSessionTimeout, "orders")
}

// wireJoin is a JoinGroup as the server sends it.
func wireJoin(group, member string, protocols ...Protocol) JoinRequest {
	return JoinRequest{Group: group, MemberID: member, ClientID: "kgo", SessionTimeout: time.Second,
		ProtocolType: ConsumerProtocolType, Protocols: protocols, WireRules: true, RequireMemberID: true}
}

func roundrobin(topics ...string) Protocol {
	return Protocol{Name: "roundrobin", Metadata: []byte("meta:" + topics[0]), Topics: topics}
}

func TestWireJoinMemberIDRequiredThenPendingIDJoins(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	res, err := f.c.Join(wireJoin("g", "", roundrobin("orders")))
	require.ErrorIs(t, err, ErrMemberIDRequired)
	require.Equal(t, "kgo-000001", res.MemberID)
	state, gen := f.state("g")
	require.Equal(t, Empty, state)
	require.Equal(t, int32(0), gen, "a pending member does not rebalance")

	res, err = f.c.Join(wireJoin("g", "kgo-000001", roundrobin("orders")))
	require.NoError(t, err)
	require.Equal(t, int32(1), res.Generation)
	require.Equal(t, "roundrobin", res.Protocol)
	require.Equal(t, "kgo-000001", res.Leader)
	require.Equal(t, []MemberMetadata{{MemberID: "kgo-000001", Metadata: []byte("meta:orders")}}, res.Members)
	require.Len(t, res.Assignment, 4)
}

func TestWireJoinOldVersionsJoinAtOnceWithNewID(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	req := wireJoin("g", "", roundrobin("orders"))
	req.RequireMemberID = false
	req.ClientID = ""
	res, err := f.c.Join(req)
	require.NoError(t, err)
	require.Equal(t, "member-000001", res.MemberID)
	require.Equal(t, int32(1), res.Generation)
}

func TestWireJoinUnknownMemberIDRejected(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	_, err := f.c.Join(wireJoin("g", "ghost", roundrobin("orders")))
	require.ErrorIs(t, err, ErrUnknownMemberID, "unknown group")

	_, err = f.c.Join(wireJoin("g", "", roundrobin("orders")))
	require.ErrorIs(t, err, ErrMemberIDRequired)
	_, err = f.c.Join(wireJoin("g", "ghost", roundrobin("orders")))
	require.ErrorIs(t, err, ErrUnknownMemberID, "known group, never handed out")
}

func TestWireJoinPendingIDExpiresAfterSessionTimeout(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	res, err := f.c.Join(wireJoin("g", "", roundrobin("orders")))
	require.ErrorIs(t, err, ErrMemberIDRequired)
	f.advance(1000)
	require.Empty(t, f.c.Expire(), "exactly at the deadline the id is still pending")
	f.advance(1)
	require.Empty(t, f.c.Expire(), "pending ids are not members")
	_, err = f.c.Join(wireJoin("g", res.MemberID, roundrobin("orders")))
	require.ErrorIs(t, err, ErrUnknownMemberID)
}

func TestWireJoinUnchangedRejoinIsRefresh(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	for _, id := range []string{"a", "b"} {
		req := wireJoin("g", id, roundrobin("orders"))
		req.RequireMemberID = false
		req.WireRules = false // seed the group with fixed ids
		_, err := f.c.Join(req)
		require.NoError(t, err)
	}
	f.advance(900)
	req := wireJoin("g", "b", roundrobin("orders"))
	req.Protocols[0].Metadata = []byte("new user data")
	require.False(t, f.c.SubscriptionChanged(req))
	res, err := f.c.Join(req)
	require.NoError(t, err)
	require.False(t, res.Rebalanced)
	require.Equal(t, int32(2), res.Generation)
	require.Equal(t, "a", res.Leader)
	require.Nil(t, res.Members, "only the leader gets the member list")
	require.Equal(t, []string{"orders-1", "orders-3"}, names(res.Assignment))

	// The refresh renewed b's session: at 1900 ms a (joined at 0) expires.
	f.advance(1000)
	require.Equal(t, []Expired{{Group: "g", MemberID: "a"}}, f.c.Expire())
}

func TestWireJoinChangedTopicsIsNewGeneration(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	_, err := f.c.Join(wireJoin("g", "", roundrobin("orders")))
	require.ErrorIs(t, err, ErrMemberIDRequired)
	_, err = f.c.Join(wireJoin("g", "kgo-000001", roundrobin("orders")))
	require.NoError(t, err)

	changed := wireJoin("g", "kgo-000001", roundrobin("orders", "payments"))
	require.True(t, f.c.SubscriptionChanged(changed))
	res, err := f.c.Join(changed)
	require.NoError(t, err)
	require.True(t, res.Rebalanced)
	require.Equal(t, int32(2), res.Generation)
	require.Equal(t, []string{"orders-0", "orders-1", "orders-2", "orders-3", "payments-0"}, names(res.Assignment))

	renamed := wireJoin("g", "kgo-000001", Protocol{Name: "range", Topics: []string{"orders", "payments"}})
	require.True(t, f.c.SubscriptionChanged(renamed), "a changed protocol name is a change")
	require.True(t, f.c.SubscriptionChanged(wireJoin("g", "other", roundrobin("orders"))), "unknown member")
	require.True(t, f.c.SubscriptionChanged(wireJoin("nogroup", "x", roundrobin("orders"))), "unknown group")
}

func TestWireJoinInconsistentProtocolRejected(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	_, err := f.c.Join(wireJoin("g", "", roundrobin("orders")))
	require.ErrorIs(t, err, ErrMemberIDRequired)
	_, err = f.c.Join(wireJoin("g", "kgo-000001", roundrobin("orders")))
	require.NoError(t, err)

	_, err = f.c.Join(wireJoin("g", "", Protocol{Name: "range", Topics: []string{"orders"}}))
	require.ErrorIs(t, err, ErrInconsistentGroupProtocol)
	_, gen := f.state("g")
	require.Equal(t, int32(1), gen)
}

func TestWireJoinSubscriptionIsChosenProtocolsTopics(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	a := wireJoin("g", "a", Protocol{Name: "range", Topics: []string{"payments"}}, Protocol{Name: "roundrobin", Topics: []string{"orders"}})
	a.WireRules, a.RequireMemberID = false, false
	_, err := f.c.Join(a)
	require.NoError(t, err)
	b := wireJoin("g", "b", Protocol{Name: "roundrobin", Topics: []string{"orders"}})
	b.WireRules, b.RequireMemberID = false, false
	res, err := f.c.Join(b)
	require.NoError(t, err)
	require.Equal(t, "roundrobin", res.Protocol)
	v, _ := f.c.Describe("g")
	require.Equal(t, []string{"orders"}, v.Members[0].Topics)
	require.Equal(t, []string{"orders-0", "orders-2"}, names(v.Members[0].Assignment))
}

// TestJoinRefusesConsumerGroupWithMembers: a classic join to a KIP-848
// group with members is INCONSISTENT_GROUP_PROTOCOL; once it is Empty the
// group takes the classic type, its generation carrying on.
func TestJoinRefusesConsumerGroupWithMembers(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.consumerJoin("g", "a", "orders")
	_, err := f.c.Join(wireJoin("g", "", roundrobin("orders")))
	require.ErrorIs(t, err, ErrInconsistentGroupProtocol)
	_, err = f.c.Join(JoinRequest{Group: "g", MemberID: "a", SessionTimeout: defaultSession, Topics: []string{"orders"}})
	require.ErrorIs(t, err, ErrInconsistentGroupProtocol, "a chapter join too")

	_, err = f.c.ConsumerHeartbeat(ConsumerHeartbeatRequest{Group: "g", MemberID: "a", MemberEpoch: LeaveEpoch})
	require.NoError(t, err)
	res := f.join("g", "b", "orders")
	require.Equal(t, int32(3), res.Generation)
	v, _ := f.c.Describe("g")
	require.Equal(t, ClassicGroup, v.Type)
	require.Equal(t, Stable, v.State)
}
