package integration

import (
	"encoding/hex"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/testkit/wiretest"
)

// TestWireSyncGroupAssignments: each member gets the coordinator's
// round-robin share, whatever plan the leader sends, at every version.
func TestWireSyncGroupAssignments(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	c := wiretest.Dial(t, b.Addr(), "c")
	a := join(t, c, "g", "orders", "payments")
	bb := join(t, c, "g", "orders")
	gen := bb.Generation

	// The leader's plan gives everything to b; it is ignored.
	plan := kmsg.ConsumerMemberAssignment{Topics: []kmsg.ConsumerMemberAssignmentTopic{
		{Topic: "orders", Partitions: []int32{0, 1, 2, 3}}, {Topic: "payments", Partitions: []int32{0}}}}
	req := wiretest.SyncRequest(5, "g", a.MemberID, gen)
	req.GroupAssignment = []kmsg.SyncGroupRequestGroupAssignment{{MemberID: bb.MemberID, MemberAssignment: plan.AppendTo(nil)}}
	protocolType, protocol := "consumer", "roundrobin"
	req.ProtocolType, req.Protocol = &protocolType, &protocol
	resp := wiretest.Do[*kmsg.SyncGroupResponse](t, c, req)
	require.Equal(t, codeNone, resp.ErrorCode)
	// orders: a 0, b 1, a 2, b 3; the cursor runs on: payments-0 to a.
	assert.Equal(t, []string{"orders-0", "orders-2", "payments-0"}, wiretest.Assignment(t, resp.MemberAssignment))
	require.NotNil(t, resp.ProtocolType)
	assert.Equal(t, "consumer", *resp.ProtocolType)
	require.NotNil(t, resp.Protocol)
	assert.Equal(t, "roundrobin", *resp.Protocol)

	for v := int16(0); v <= 5; v++ {
		resp := wiretest.Do[*kmsg.SyncGroupResponse](t, c, wiretest.SyncRequest(v, "g", bb.MemberID, gen))
		require.Equal(t, codeNone, resp.ErrorCode, "v%d", v)
		assert.Equal(t, []string{"orders-1", "orders-3"}, wiretest.Assignment(t, resp.MemberAssignment), "v%d", v)
	}
}

// TestWireSyncGroupNeverEmptyBytes: a member with no partition gets a
// ConsumerMemberAssignment with no topics (10 bytes), never zero bytes,
// which kgo could not parse.
func TestWireSyncGroupNeverEmptyBytes(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	c := wiretest.Dial(t, b.Addr(), "c")
	join(t, c, "g", "payments")
	idle := join(t, c, "g", "payments")
	for v := int16(0); v <= 5; v++ {
		resp := wiretest.Do[*kmsg.SyncGroupResponse](t, c, wiretest.SyncRequest(v, "g", idle.MemberID, idle.Generation))
		require.Equal(t, codeNone, resp.ErrorCode)
		assert.Equal(t, "000000000000ffffffff", hex.EncodeToString(resp.MemberAssignment), "v%d", v)
		assert.Empty(t, wiretest.Assignment(t, resp.MemberAssignment))
	}
	g := describe(t, c, "g")[0]
	require.Len(t, g.Members, 2)
	assert.Equal(t, "000000000000ffffffff", hex.EncodeToString(g.Members[1].MemberAssignment), "DescribeGroups too")
}

func TestWireSyncGroupErrors(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	c := wiretest.Dial(t, b.Addr(), "c")
	a := join(t, c, "g", "orders")
	bb := join(t, c, "g", "orders")
	tests := []struct {
		name string
		req  *kmsg.SyncGroupRequest
		want int16
	}{
		{"stale generation", wiretest.SyncRequest(5, "g", a.MemberID, a.Generation), codeIllegalGeneration},
		{"future generation", wiretest.SyncRequest(5, "g", a.MemberID, bb.Generation+1), codeIllegalGeneration},
		{"unknown member", wiretest.SyncRequest(5, "g", "c-999999", bb.Generation), codeUnknownMemberID},
		{"unknown member, stale generation", wiretest.SyncRequest(5, "g", "c-999999", a.Generation), codeUnknownMemberID},
		{"unknown group", wiretest.SyncRequest(5, "nope", a.MemberID, bb.Generation), codeUnknownMemberID},
		{"empty group id", wiretest.SyncRequest(5, "", a.MemberID, bb.Generation), codeInvalidGroupID},
	}
	for _, tc := range tests {
		for _, v := range []int16{0, 5} {
			t.Run(fmt.Sprintf("%s v%d", tc.name, v), func(t *testing.T) {
				t.Parallel()
				req := *tc.req
				req.Version = v
				resp := wiretest.Do[*kmsg.SyncGroupResponse](t, wiretest.Dial(t, b.Addr(), "c"), &req)
				assert.Equal(t, tc.want, resp.ErrorCode)
				assert.Empty(t, resp.MemberAssignment)
			})
		}
	}
}

// TestWireSyncGroupChecksProtocol: SyncGroup v5's protocol type and name,
// when given, must be the group's (INCONSISTENT_GROUP_PROTOCOL otherwise,
// as Kafka); they are echoed back, and null stays null.
func TestWireSyncGroupChecksProtocol(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	c := wiretest.Dial(t, b.Addr(), "c")
	m := join(t, c, "g", "orders")

	req := wiretest.SyncRequest(5, "g", m.MemberID, m.Generation)
	req.ProtocolType, req.Protocol = ptrTo("consumer"), ptrTo("range")
	resp := wiretest.Do[*kmsg.SyncGroupResponse](t, c, req)
	assert.Equal(t, kerr.InconsistentGroupProtocol.Code, resp.ErrorCode, "the group chose roundrobin")
	assert.Empty(t, resp.MemberAssignment)

	req.ProtocolType, req.Protocol = ptrTo("connect"), ptrTo("roundrobin")
	resp = wiretest.Do[*kmsg.SyncGroupResponse](t, c, req)
	assert.Equal(t, kerr.InconsistentGroupProtocol.Code, resp.ErrorCode)

	req.ProtocolType = ptrTo("consumer")
	resp = wiretest.Do[*kmsg.SyncGroupResponse](t, c, req)
	assert.Equal(t, codeNone, resp.ErrorCode)
	assert.Equal(t, ptrTo("roundrobin"), resp.Protocol)
	assert.Equal(t, []string{"orders-0", "orders-1", "orders-2", "orders-3"}, wiretest.Assignment(t, resp.MemberAssignment))

	resp = wiretest.Do[*kmsg.SyncGroupResponse](t, c, wiretest.SyncRequest(5, "g", m.MemberID, m.Generation))
	assert.Equal(t, codeNone, resp.ErrorCode)
	assert.Nil(t, resp.ProtocolType, "null in, null out")
	assert.Nil(t, resp.Protocol)
}
