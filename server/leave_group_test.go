package server

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/coordinator"
	"github.com/minibroker/minibroker/testkit/wiretest"
)

func TestLeaveGroupSingle(t *testing.T) {
	t.Parallel()
	for _, v := range []int16{0, 1, 2} {
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			a := e.join("c", "g", "", "orders")
			e.join("c", "g", "", "orders")

			resp := call[*kmsg.LeaveGroupResponse](e, "c", wiretest.LeaveRequest(v, "g", a.MemberID))
			assert.Zero(t, resp.ErrorCode)
			assert.Empty(t, resp.Members, "v0-2 answer only a top-level code")
			view, _ := e.coord.Describe("g")
			assert.Equal(t, int32(3), view.Generation)
			assert.Len(t, view.Members, 1)

			resp = call[*kmsg.LeaveGroupResponse](e, "c", wiretest.LeaveRequest(v, "g", a.MemberID))
			assert.Zero(t, resp.ErrorCode, "leaving again is NONE (the chapter's idempotent leave)")
			resp = call[*kmsg.LeaveGroupResponse](e, "c", wiretest.LeaveRequest(v, "nope", "x"))
			assert.Zero(t, resp.ErrorCode, "an unknown group too")
			view, _ = e.coord.Describe("g")
			assert.Equal(t, int32(3), view.Generation, "no-op leaves do not rebalance")
		})
	}
}

func TestLeaveGroupBatch(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a := e.join("c", "g", "", "orders")
	b := e.join("c", "g", "", "orders")
	require.Equal(t, int32(2), b.Generation)

	resp := call[*kmsg.LeaveGroupResponse](e, "c", wiretest.LeaveRequest(5, "g", a.MemberID, "c-999999", b.MemberID))
	assert.Zero(t, resp.ErrorCode)
	require.Len(t, resp.Members, 3)
	for i, id := range []string{a.MemberID, "c-999999", b.MemberID} {
		assert.Equal(t, id, resp.Members[i].MemberID)
		assert.Zero(t, resp.Members[i].ErrorCode, "unknown members are NONE too")
	}
	view, _ := e.coord.Describe("g")
	assert.Equal(t, coordinator.Empty, view.State)
	assert.Equal(t, int32(3), view.Generation, "a batch leave is one rebalance")
	logged := e.logs.Find("members left")
	require.Len(t, logged, 1)
	assert.Equal(t, "[c-000001 c-000002]", logged[0].Attrs["member"])
}

func TestLeaveGroupEmptyGroupID(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, v := range []int16{0, 3} {
		resp := call[*kmsg.LeaveGroupResponse](e, "c", wiretest.LeaveRequest(v, "", "x"))
		assert.Equal(t, kerr.InvalidGroupID.Code, resp.ErrorCode, "v%d", v)
	}
}

func TestLeaveGroupByInstanceID(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	old, current := e.staticRestart("g")
	a := "a"
	resp := call[*kmsg.LeaveGroupResponse](e, "kgo", &kmsg.LeaveGroupRequest{Version: 5, Group: "g",
		Members: []kmsg.LeaveGroupRequestMember{{MemberID: old, InstanceID: &a}}})
	require.Zero(t, resp.ErrorCode)
	require.Len(t, resp.Members, 1)
	assert.Equal(t, kerr.FencedInstanceID.Code, resp.Members[0].ErrorCode)
	v, _ := e.coord.Describe("g")
	require.Len(t, v.Members, 1, "a fenced leave leaves nothing")

	resp = call[*kmsg.LeaveGroupResponse](e, "kgo", &kmsg.LeaveGroupRequest{Version: 5, Group: "g",
		Members: []kmsg.LeaveGroupRequestMember{{InstanceID: &a}}})
	require.Len(t, resp.Members, 1)
	assert.Zero(t, resp.Members[0].ErrorCode)
	assert.Equal(t, current, resp.Members[0].MemberID, "the member the instance id found")
	v, _ = e.coord.Describe("g")
	assert.Equal(t, coordinator.Empty, v.State)
	assert.Equal(t, int32(2), v.Generation)
}
