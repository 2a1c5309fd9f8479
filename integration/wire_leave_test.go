package integration

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/testkit/wiretest"
)

// TestWireLeaveGroupSingle: v0-2 name one member and answer only a
// top-level code; an unknown member or group is NONE (the chapter's
// idempotent leave; Kafka answers UNKNOWN_MEMBER_ID).
func TestWireLeaveGroupSingle(t *testing.T) {
	t.Parallel()
	for v := int16(0); v <= 2; v++ {
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) {
			t.Parallel()
			b := startBroker(t)
			c := wiretest.Dial(t, b.Addr(), "c")
			a := join(t, c, "g", "orders")
			bb := join(t, c, "g", "orders")

			resp := wiretest.Do[*kmsg.LeaveGroupResponse](t, c, wiretest.LeaveRequest(v, "g", a.MemberID))
			assert.Equal(t, codeNone, resp.ErrorCode)
			assert.Empty(t, resp.Members)
			assert.Equal(t, codeNone, heartbeat(t, c, "g", bb.MemberID, bb.Generation+1), "one rebalance")
			assert.Equal(t, []string{"orders-0", "orders-1", "orders-2", "orders-3"}, assignment(t, c, "g", bb.MemberID, bb.Generation+1))

			for _, tc := range []struct{ group, member string }{{"g", a.MemberID}, {"g", "c-999999"}, {"nope", "x"}} {
				resp := wiretest.Do[*kmsg.LeaveGroupResponse](t, c, wiretest.LeaveRequest(v, tc.group, tc.member))
				assert.Equal(t, codeNone, resp.ErrorCode, "%s/%s", tc.group, tc.member)
			}
			assert.Equal(t, codeNone, heartbeat(t, c, "g", bb.MemberID, bb.Generation+1), "no-op leaves do not rebalance")
			assert.Equal(t, codeInvalidGroupID, wiretest.Do[*kmsg.LeaveGroupResponse](t, c, wiretest.LeaveRequest(v, "", a.MemberID)).ErrorCode)
		})
	}
}

// TestWireLeaveGroupBatch: v3+ batch members and answer each; the members
// that left cause one rebalance.
func TestWireLeaveGroupBatch(t *testing.T) {
	t.Parallel()
	for v := int16(3); v <= 5; v++ {
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) {
			t.Parallel()
			b := startBroker(t)
			c := wiretest.Dial(t, b.Addr(), "c")
			a := join(t, c, "g", "orders")
			bb := join(t, c, "g", "orders")
			stay := join(t, c, "g", "orders")
			require.Equal(t, int32(3), stay.Generation)

			resp := wiretest.Do[*kmsg.LeaveGroupResponse](t, c, wiretest.LeaveRequest(v, "g", a.MemberID, "c-999999", bb.MemberID))
			assert.Equal(t, codeNone, resp.ErrorCode)
			require.Len(t, resp.Members, 3)
			for i, id := range []string{a.MemberID, "c-999999", bb.MemberID} {
				assert.Equal(t, id, resp.Members[i].MemberID)
				assert.Equal(t, codeNone, resp.Members[i].ErrorCode, "%s", id)
			}
			assert.Equal(t, codeNone, heartbeat(t, c, "g", stay.MemberID, 4), "the batch was one rebalance: generation 4")

			resp = wiretest.Do[*kmsg.LeaveGroupResponse](t, c, wiretest.LeaveRequest(v, "g", stay.MemberID))
			require.Equal(t, codeNone, resp.ErrorCode)
			g := describe(t, c, "g")[0]
			assert.Equal(t, "Empty", g.State, "the group stays, Empty")
			assert.Empty(t, g.Members)
			again := join(t, c, "g", "orders")
			assert.Equal(t, int32(6), again.Generation, "the generation survives the empty group")

			resp = wiretest.Do[*kmsg.LeaveGroupResponse](t, c, wiretest.LeaveRequest(v, "nope", "x", "y"))
			assert.Equal(t, codeNone, resp.ErrorCode)
			require.Len(t, resp.Members, 2)
			assert.Equal(t, codeNone, resp.Members[0].ErrorCode, "unknown group: NONE per member too")
		})
	}
}
