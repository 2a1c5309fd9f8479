package integration

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/testkit/wiretest"
)

// Kafka error codes the wire tests pin, by kerr name.
const (
	codeNone                      int16 = 0
	codeOffsetOutOfRange          int16 = 1
	codeUnknownTopicOrPartition   int16 = 3
	codeOffsetMetadataTooLarge    int16 = 12
	codeInvalidTopicException     int16 = 17
	codeIllegalGeneration         int16 = 22
	codeInconsistentGroupProtocol int16 = 23
	codeInvalidGroupID            int16 = 24
	codeUnknownMemberID           int16 = 25
	codeInvalidSessionTimeout     int16 = 26
	codeRebalanceInProgress       int16 = 27
	codeUnsupportedVersion        int16 = 35
	codeTopicAlreadyExists        int16 = 36
	codeInvalidPartitions         int16 = 37
	codeInvalidReplicationFactor  int16 = 38
	codeInvalidRequest            int16 = 42
	codeMemberIDRequired          int16 = 79
)

// TestWireJoinRulesInOrder drives each join rule of docs/design.md section 4,
// and shows the order by breaking a later rule too: the earlier rule's
// code wins.
func TestWireJoinRulesInOrder(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	setup := wiretest.Dial(t, b.Addr(), "setup")
	existing := join(t, setup, "g", "orders") // "g" exists with one "roundrobin" member
	require.Equal(t, "setup-000001", existing.MemberID)

	tests := []struct {
		name       string
		req        *kmsg.JoinGroupRequest
		mutate     func(*kmsg.JoinGroupRequest)
		wantCode   int16
		wantMember string
	}{
		{"empty group id, before a bad session and an unknown topic", joinRequest(9, "", "", "nope"),
			func(r *kmsg.JoinGroupRequest) { r.SessionTimeoutMillis = 1 }, codeInvalidGroupID, ""},
		{"session below the 10ms minimum, before a bad protocol type", joinRequest(9, "g", "", "orders"),
			func(r *kmsg.JoinGroupRequest) { r.SessionTimeoutMillis = 9; r.ProtocolType = "connect" }, codeInvalidSessionTimeout, ""},
		{"session above the 30m maximum", joinRequest(9, "g", "", "orders"),
			func(r *kmsg.JoinGroupRequest) {
				r.SessionTimeoutMillis = int32((30*time.Minute + time.Millisecond) / time.Millisecond)
			},
			codeInvalidSessionTimeout, ""},
		{"protocol type not consumer, before an unknown topic", joinRequest(9, "g", "", "nope"),
			func(r *kmsg.JoinGroupRequest) { r.ProtocolType = "connect" }, codeInconsistentGroupProtocol, ""},
		{"no protocols", joinRequest(9, "g", "", "orders"),
			func(r *kmsg.JoinGroupRequest) { r.Protocols = nil }, codeInconsistentGroupProtocol, ""},
		{"no protocol in common with the group", joinRequestProtocols(3, "g", "", protocolSpec{"range", []string{"orders"}}),
			nil, codeInconsistentGroupProtocol, ""},
		{"unknown topic, before an unknown member id", joinRequest(9, "g", "ghost-000009", "orders", "nope"),
			nil, codeUnknownTopicOrPartition, "ghost-000009"},
		{"unknown member id", joinRequest(9, "g", "ghost-000009", "orders"),
			nil, codeUnknownMemberID, "ghost-000009"},
		{"unknown member id of an unknown group", joinRequest(3, "other", "ghost-000009", "orders"),
			nil, codeUnknownMemberID, "ghost-000009"},
	}
	t.Run("rules", func(t *testing.T) { // returns when its parallel cases are done
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				if tc.mutate != nil {
					tc.mutate(tc.req)
				}
				resp := wiretest.Do[*kmsg.JoinGroupResponse](t, wiretest.Dial(t, b.Addr(), "c"), tc.req)
				assert.Equal(t, tc.wantCode, resp.ErrorCode)
				assert.Equal(t, tc.wantMember, resp.MemberID)
				assert.Equal(t, int32(-1), resp.Generation)
				assert.Empty(t, resp.LeaderID)
				assert.Empty(t, resp.Members)
			})
		}
	})
	// None of the rejections touched the group or used a member id.
	resp := rejoin(t, setup, "g", existing.MemberID, "orders")
	assert.Equal(t, int32(1), resp.Generation)
	assert.Len(t, resp.Members, 1)
	next := wiretest.Do[*kmsg.JoinGroupResponse](t, setup, joinRequest(9, "g", "", "orders"))
	assert.Equal(t, "setup-000002", next.MemberID)
}

// TestWireJoinSessionBounds: exactly the minimum and the maximum are
// accepted.
func TestWireJoinSessionBounds(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	c := wiretest.Dial(t, b.Addr(), "c")
	for _, d := range []time.Duration{10 * time.Millisecond, 30 * time.Minute} {
		req := joinRequest(3, "g"+d.String(), "", "orders")
		req.SessionTimeoutMillis = int32(d / time.Millisecond)
		assert.Equal(t, codeNone, wiretest.Do[*kmsg.JoinGroupResponse](t, c, req).ErrorCode, d)
	}
}

// TestWireJoinMemberIDRequired: from v4 an empty member id gets
// MEMBER_ID_REQUIRED with a new id, pending until it joins with it.
func TestWireJoinMemberIDRequired(t *testing.T) {
	t.Parallel()
	for v := int16(4); v <= 9; v++ {
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) {
			t.Parallel()
			b := startBroker(t)
			c := wiretest.Dial(t, b.Addr(), "kgo")
			first := wiretest.Do[*kmsg.JoinGroupResponse](t, c, joinRequest(v, "g", "", "orders"))
			assert.Equal(t, codeMemberIDRequired, first.ErrorCode)
			assert.Equal(t, "kgo-000001", first.MemberID)
			assert.Equal(t, int32(-1), first.Generation)
			assert.Empty(t, first.LeaderID)

			resp := wiretest.Do[*kmsg.JoinGroupResponse](t, c, joinRequest(v, "g", "kgo-000001", "orders"))
			require.Equal(t, codeNone, resp.ErrorCode)
			assert.Equal(t, "kgo-000001", resp.MemberID)
			assert.Equal(t, int32(1), resp.Generation)
			assert.Equal(t, "kgo-000001", resp.LeaderID)
			require.Len(t, resp.Members, 1)
			assert.Equal(t, "kgo-000001", resp.Members[0].MemberID)
			assert.Equal(t, wiretest.ConsumerMetadata(0, "orders"), resp.Members[0].ProtocolMetadata)
			if v >= 7 {
				require.NotNil(t, resp.ProtocolType)
				assert.Equal(t, "consumer", *resp.ProtocolType)
				require.NotNil(t, resp.Protocol)
			}
			if resp.Protocol != nil {
				assert.Equal(t, "roundrobin", *resp.Protocol)
			}
			assert.Equal(t, []string{"orders-0", "orders-1", "orders-2", "orders-3"},
				assignment(t, c, "g", "kgo-000001", 1))

			next := wiretest.Do[*kmsg.JoinGroupResponse](t, c, joinRequest(v, "g", "", "orders"))
			assert.Equal(t, "kgo-000002", next.MemberID, "ids are <client-id>-<zero-padded sequence>")
		})
	}
}

// TestWireJoinPendingIDExpires: a pending id is forgotten by the expiry
// step once its session timeout has passed; joining with it is then an
// unknown member.
func TestWireJoinPendingIDExpires(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	c := wiretest.Dial(t, b.Addr(), "kgo")
	first := wiretest.Do[*kmsg.JoinGroupResponse](t, c, joinRequest(9, "g", "", "orders"))
	require.Equal(t, codeMemberIDRequired, first.ErrorCode)
	_, err := b.Advance(session)
	require.NoError(t, err)
	assert.Empty(t, b.Expire())
	resp := wiretest.Do[*kmsg.JoinGroupResponse](t, c, joinRequest(9, "g", first.MemberID, "orders"))
	require.Equal(t, codeNone, resp.ErrorCode, "at the exact deadline the id is still pending")

	second := wiretest.Do[*kmsg.JoinGroupResponse](t, c, joinRequest(9, "g", "", "orders"))
	require.Equal(t, codeMemberIDRequired, second.ErrorCode)
	_, err = b.Advance(session + time.Millisecond)
	require.NoError(t, err)
	b.Expire()
	resp = wiretest.Do[*kmsg.JoinGroupResponse](t, c, joinRequest(9, "g", second.MemberID, "orders"))
	assert.Equal(t, codeUnknownMemberID, resp.ErrorCode)
}

// TestWireJoinOldVersionsJoinAtOnce: v0-3 have no MEMBER_ID_REQUIRED.
func TestWireJoinOldVersionsJoinAtOnce(t *testing.T) {
	t.Parallel()
	for v := int16(0); v <= 3; v++ {
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) {
			t.Parallel()
			b := startBroker(t)
			c := wiretest.Dial(t, b.Addr(), "app")
			resp := wiretest.Do[*kmsg.JoinGroupResponse](t, c, joinRequest(v, "g", "", "orders"))
			require.Equal(t, codeNone, resp.ErrorCode)
			assert.Equal(t, "app-000001", resp.MemberID)
			assert.Equal(t, int32(1), resp.Generation)
			assert.Equal(t, "app-000001", resp.LeaderID)
			require.Len(t, resp.Members, 1)
		})
	}
}

// TestWireJoinRefreshAndRejoin: an unchanged re-join is a refresh (same
// generation); a changed topic set or protocol list is a new generation.
func TestWireJoinRefreshAndRejoin(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	c := wiretest.Dial(t, b.Addr(), "c")
	a := join(t, c, "g", "orders")
	require.Equal(t, int32(1), a.Generation)

	resp := rejoin(t, c, "g", a.MemberID, "orders")
	assert.Equal(t, codeNone, resp.ErrorCode)
	assert.Equal(t, int32(1), resp.Generation, "unchanged: same generation")
	assert.Equal(t, a.MemberID, resp.MemberID)

	resp = rejoin(t, c, "g", a.MemberID, "orders", "orders") // the same set
	assert.Equal(t, int32(1), resp.Generation, "a duplicate topic is the same set")

	resp = rejoin(t, c, "g", a.MemberID, "orders", "payments")
	assert.Equal(t, int32(2), resp.Generation, "a changed topic set is a new generation")
	assert.Equal(t, []string{"orders-0", "orders-1", "orders-2", "orders-3", "payments-0"}, assignment(t, c, "g", a.MemberID, 2))

	resp = wiretest.Do[*kmsg.JoinGroupResponse](t, c, joinRequestProtocols(9, "g", a.MemberID,
		protocolSpec{"roundrobin", []string{"orders", "payments"}}, protocolSpec{"range", []string{"orders", "payments"}}))
	assert.Equal(t, int32(3), resp.Generation, "a changed protocol list is a new generation")
}

// TestWireJoinRejoinIgnoresUserData: only topics and protocol names count;
// metadata bytes that differ otherwise (user data, owned partitions, the
// generation a cooperative client embeds) are a refresh. Kafka compares
// the bytes and would rebalance.
func TestWireJoinRejoinIgnoresUserData(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	c := wiretest.Dial(t, b.Addr(), "c")
	a := join(t, c, "g", "orders")
	m := kmsg.NewConsumerMemberMetadata()
	m.Version = 2
	m.Topics = []string{"orders"}
	m.UserData = []byte("sticky")
	m.OwnedPartitions = []kmsg.ConsumerMemberMetadataOwnedPartition{{Topic: "orders", Partitions: []int32{0, 1, 2, 3}}}
	m.Generation = 1
	req := joinRequest(9, "g", a.MemberID)
	req.Protocols[0].Metadata = m.AppendTo(nil)
	resp := wiretest.Do[*kmsg.JoinGroupResponse](t, c, req)
	assert.Equal(t, codeNone, resp.ErrorCode)
	assert.Equal(t, int32(1), resp.Generation)
	require.Len(t, resp.Members, 1)
	assert.Equal(t, req.Protocols[0].Metadata, resp.Members[0].ProtocolMetadata, "the new metadata is kept")
}

// TestWireJoinLeaderAndFollowers: the leader is the first member id in
// sorted order and only it receives the member list.
func TestWireJoinLeaderAndFollowers(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	c := wiretest.Dial(t, b.Addr(), "c")
	a := join(t, c, "g", "orders")
	bb := join(t, c, "g", "orders")
	cc := join(t, c, "g", "payments")
	assert.Equal(t, []string{"c-000001", "c-000002", "c-000003"}, []string{a.MemberID, bb.MemberID, cc.MemberID})
	assert.Equal(t, int32(3), cc.Generation)
	for _, f := range []*kmsg.JoinGroupResponse{bb, cc} {
		assert.Equal(t, "c-000001", f.LeaderID)
		assert.Empty(t, f.Members, "%s is a follower", f.MemberID)
	}

	assert.Equal(t, codeIllegalGeneration, heartbeat(t, c, "g", a.MemberID, 1), "the leader learns of generation 3")
	leader := rejoin(t, c, "g", a.MemberID, "orders")
	assert.Equal(t, int32(3), leader.Generation, "its unchanged re-join is a refresh")
	assert.Equal(t, "c-000001", leader.LeaderID)
	require.Len(t, leader.Members, 3)
	for i, want := range []struct {
		id     string
		topics []string
	}{{"c-000001", []string{"orders"}}, {"c-000002", []string{"orders"}}, {"c-000003", []string{"payments"}}} {
		assert.Equal(t, want.id, leader.Members[i].MemberID)
		assert.Equal(t, wiretest.ConsumerMetadata(0, want.topics...), leader.Members[i].ProtocolMetadata)
	}
	follower := rejoin(t, c, "g", cc.MemberID, "payments")
	assert.Empty(t, follower.Members)
}

// TestWireJoinProtocolVote follows Kafka's ClassicGroup.selectProtocol:
// among the names every member supports, each member votes for its first
// choice; ties go to the name that sorts first.
func TestWireJoinProtocolVote(t *testing.T) {
	t.Parallel()
	rangeRR := []protocolSpec{{"range", []string{"orders"}}, {"roundrobin", []string{"orders"}}}
	rrRange := []protocolSpec{{"roundrobin", []string{"orders"}}, {"range", []string{"orders"}}}
	tests := []struct {
		name    string
		members [][]protocolSpec
		want    string
	}{
		{"alone, first choice", [][]protocolSpec{rangeRR}, "range"},
		{"majority", [][]protocolSpec{rangeRR, rrRange, rrRange}, "roundrobin"},
		{"tie goes to the first name", [][]protocolSpec{rrRange, rangeRR}, "range"},
		{"only the common name is a candidate", [][]protocolSpec{
			{{"cooperative-sticky", []string{"orders"}}, {"roundrobin", []string{"orders"}}},
			{{"roundrobin", []string{"orders"}}},
		}, "roundrobin"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := startBroker(t)
			c := wiretest.Dial(t, b.Addr(), "c")
			var last *kmsg.JoinGroupResponse
			for _, ps := range tc.members {
				last = wiretest.Do[*kmsg.JoinGroupResponse](t, c, joinRequestProtocols(3, "g", "", ps...))
				require.Equal(t, codeNone, last.ErrorCode)
			}
			leader := wiretest.Do[*kmsg.JoinGroupResponse](t, c, joinRequestProtocols(3, "g", "c-000001", tc.members[0]...))
			require.Equal(t, codeNone, leader.ErrorCode)
			assert.Equal(t, last.Generation, leader.Generation)
			require.NotNil(t, leader.Protocol)
			assert.Equal(t, tc.want, *leader.Protocol)
			g := describe(t, c, "g")[0]
			assert.Equal(t, tc.want, g.Protocol)
		})
	}
}

// TestWireJoinChosenProtocolDecidesSubscription: the subscription is the
// topic list of the protocol the vote chose.
func TestWireJoinChosenProtocolDecidesSubscription(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	c := wiretest.Dial(t, b.Addr(), "c")
	resp := wiretest.Do[*kmsg.JoinGroupResponse](t, c, joinRequestProtocols(3, "g", "",
		protocolSpec{"a-first", []string{"payments"}}, protocolSpec{"b-second", []string{"orders"}}))
	require.Equal(t, codeNone, resp.ErrorCode)
	assert.Equal(t, []string{"payments-0"}, assignment(t, c, "g", resp.MemberID, resp.Generation))

	resp = wiretest.Do[*kmsg.JoinGroupResponse](t, c, joinRequestProtocols(3, "g", "",
		protocolSpec{"b-second", []string{"orders"}}))
	require.Equal(t, codeNone, resp.ErrorCode)
	require.Equal(t, "b-second", *resp.Protocol, "the only common name")
	assert.Equal(t, []string{"orders-1", "orders-3"}, assignment(t, c, "g", resp.MemberID, resp.Generation))
	assert.Equal(t, []string{"orders-0", "orders-2"}, assignment(t, c, "g", "c-000001", resp.Generation),
		"the first member now follows its b-second subscription")
}

// TestWireJoinInconsistentKnownMember: a known member re-joining with no
// protocol in common with the others is INCONSISTENT_GROUP_PROTOCOL with
// an empty member id (Kafka echoes a known member's id), and stays a
// member at the same generation.
func TestWireJoinInconsistentKnownMember(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	c := wiretest.Dial(t, b.Addr(), "c")
	a := join(t, c, "g", "orders")
	bb := join(t, c, "g", "orders")
	resp := wiretest.Do[*kmsg.JoinGroupResponse](t, c, joinRequestProtocols(9, "g", a.MemberID, protocolSpec{"range", []string{"orders"}}))
	assert.Equal(t, codeInconsistentGroupProtocol, resp.ErrorCode)
	assert.Empty(t, resp.MemberID)
	assert.Equal(t, int32(-1), resp.Generation)
	assert.Equal(t, codeNone, heartbeat(t, c, "g", a.MemberID, bb.Generation), "still a member, same generation")
}
