package server

import (
	"encoding/hex"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/testkit/wiretest"
)

func TestSyncGroup(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a := e.join("c", "g", "", "orders")
	b := e.join("c", "g", "", "payments")
	idle := e.join("c", "g", "", "orders")
	gen := idle.Generation
	require.Equal(t, int32(3), gen)

	tests := []struct {
		name     string
		req      *kmsg.SyncGroupRequest
		wantCode int16
		want     []string
	}{
		{"leader", wiretest.SyncRequest(0, "g", a.MemberID, gen), 0, []string{"orders-0", "orders-2"}},
		{"payments", wiretest.SyncRequest(3, "g", b.MemberID, gen), 0, []string{"payments-0"}},
		{"orders follower", wiretest.SyncRequest(4, "g", idle.MemberID, gen), 0, []string{"orders-1", "orders-3"}},
		{"empty group id", wiretest.SyncRequest(5, "", a.MemberID, gen), kerr.InvalidGroupID.Code, nil},
		{"unknown group", wiretest.SyncRequest(5, "nope", a.MemberID, gen), kerr.UnknownMemberID.Code, nil},
		{"unknown member", wiretest.SyncRequest(5, "g", "c-999999", gen), kerr.UnknownMemberID.Code, nil},
		{"stale generation", wiretest.SyncRequest(5, "g", a.MemberID, gen-1), kerr.IllegalGeneration.Code, nil},
		{"future generation", wiretest.SyncRequest(5, "g", a.MemberID, gen+1), kerr.IllegalGeneration.Code, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp := call[*kmsg.SyncGroupResponse](e, "c", tc.req)
			assert.Equal(t, tc.wantCode, resp.ErrorCode)
			if tc.wantCode != 0 {
				assert.Empty(t, resp.MemberAssignment)
				return
			}
			assert.Equal(t, tc.want, wiretest.Assignment(t, resp.MemberAssignment))
		})
	}
}

// TestSyncGroupIgnoresLeaderPlanAndNeverSendsEmptyBytes: a member with no
// partition gets a decodable empty assignment, whatever the leader sent.
func TestSyncGroupIgnoresLeaderPlanAndNeverSendsEmptyBytes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a := e.join("c", "g", "", "payments")
	b := e.join("c", "g", "", "payments")
	req := wiretest.SyncRequest(5, "g", a.MemberID, b.Generation)
	protocolType, protocol := "consumer", "roundrobin"
	req.ProtocolType, req.Protocol = &protocolType, &protocol
	plan := kmsg.ConsumerMemberAssignment{Topics: []kmsg.ConsumerMemberAssignmentTopic{{Topic: "payments", Partitions: []int32{0}}}}
	req.GroupAssignment = []kmsg.SyncGroupRequestGroupAssignment{
		{MemberID: a.MemberID, MemberAssignment: nil},
		{MemberID: b.MemberID, MemberAssignment: plan.AppendTo(nil)},
	}
	resp := call[*kmsg.SyncGroupResponse](e, "c", req)
	require.Zero(t, resp.ErrorCode)
	assert.Equal(t, []string{"payments-0"}, wiretest.Assignment(t, resp.MemberAssignment), "the coordinator's assignment, not the plan")
	assert.Equal(t, &protocolType, resp.ProtocolType, "v5 echoes the protocol type")
	assert.Equal(t, &protocol, resp.Protocol, "and name")

	resp = call[*kmsg.SyncGroupResponse](e, "c", wiretest.SyncRequest(5, "g", b.MemberID, b.Generation))
	require.Zero(t, resp.ErrorCode)
	assert.Equal(t, "000000000000ffffffff", hex.EncodeToString(resp.MemberAssignment))
	assert.Empty(t, wiretest.Assignment(t, resp.MemberAssignment))
}

func TestSyncGroupFencedInstance(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	old, current := e.staticRestart("g")
	a := "a"
	resp := call[*kmsg.SyncGroupResponse](e, "kgo", &kmsg.SyncGroupRequest{Version: 5, Group: "g", MemberID: old, InstanceID: &a, Generation: 1})
	assert.Equal(t, kerr.FencedInstanceID.Code, resp.ErrorCode)
	resp = call[*kmsg.SyncGroupResponse](e, "kgo", &kmsg.SyncGroupRequest{Version: 5, Group: "g", MemberID: current, InstanceID: &a, Generation: 1})
	require.Zero(t, resp.ErrorCode)
	assert.Equal(t, []string{"orders-0", "orders-1", "orders-2", "orders-3"}, wiretest.Assignment(t, resp.MemberAssignment))
}
