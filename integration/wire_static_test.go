package integration

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/testkit/wiretest"
	"github.com/minibroker/minibroker/wireclient"
)

const (
	codeFencedInstanceID     int16 = 82
	codeUnreleasedInstanceID int16 = 111
)

// staticJoin sends a JoinGroup v9 naming instance and returns the response,
// whatever its code.
func staticJoin(t *testing.T, c *wireclient.Client, group, member, instance string, topics ...string) *kmsg.JoinGroupResponse {
	t.Helper()
	req := joinRequest(9, group, member, topics...)
	req.InstanceID = &instance
	return wiretest.Do[*kmsg.JoinGroupResponse](t, c, req)
}

// TestWireStaticRestartKeepsAssignmentAndFencesThePreviousRun: a static
// member joins at once, and its restart takes its old place (new member
// id, same generation, same partitions, the other member untouched); the
// previous run's member id is then FENCED_INSTANCE_ID on every request
// that names the instance, before the generation is asked, and
// UNKNOWN_MEMBER_ID on those that do not.
func TestWireStaticRestartKeepsAssignmentAndFencesThePreviousRun(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	c := wiretest.Dial(t, b.Addr(), "app")
	first := staticJoin(t, c, "g", "", "app-1", "orders")
	require.Equal(t, codeNone, first.ErrorCode, "no MEMBER_ID_REQUIRED for a static member")
	require.Equal(t, "app-1-000001", first.MemberID)
	other := join(t, wiretest.Dial(t, b.Addr(), "other"), "g", "orders")
	require.Equal(t, int32(2), other.Generation)
	require.Equal(t, []string{"orders-0", "orders-2"}, assignment(t, c, "g", first.MemberID, 2))
	require.Equal(t, []string{"orders-1", "orders-3"}, assignment(t, c, "g", other.MemberID, 2))

	second := staticJoin(t, c, "g", "", "app-1", "orders")
	require.Equal(t, codeNone, second.ErrorCode)
	require.Equal(t, "app-1-000003", second.MemberID)
	require.Equal(t, int32(2), second.Generation, "a restart is no new generation")
	require.Equal(t, []string{"orders-0", "orders-2"}, assignment(t, c, "g", second.MemberID, 2))
	require.Equal(t, []string{"orders-1", "orders-3"}, assignment(t, c, "g", other.MemberID, 2))
	assert.Equal(t, codeNone, heartbeat(t, c, "g", other.MemberID, 2), "the other member was not fenced")

	instance := "app-1"
	hb := wiretest.HeartbeatRequest(4, "g", first.MemberID, 2)
	hb.InstanceID = &instance
	assert.Equal(t, codeFencedInstanceID, wiretest.Do[*kmsg.HeartbeatResponse](t, c, hb).ErrorCode, "Heartbeat")
	hb.Generation = 1
	assert.Equal(t, codeFencedInstanceID, wiretest.Do[*kmsg.HeartbeatResponse](t, c, hb).ErrorCode, "identity is asked before the generation")
	sync := wiretest.SyncRequest(5, "g", first.MemberID, 2)
	sync.InstanceID = &instance
	assert.Equal(t, codeFencedInstanceID, wiretest.Do[*kmsg.SyncGroupResponse](t, c, sync).ErrorCode, "SyncGroup")
	cm := commitRequest(8, "g", first.MemberID, 2, tp{"orders", 0, 5}, tp{"orders", 2, 5})
	cm.InstanceID = &instance
	assert.Equal(t, repeat(codeFencedInstanceID, 2), wiretest.Commit(t, c, cm), "OffsetCommit")
	assert.Equal(t, codeFencedInstanceID, staticJoin(t, c, "g", first.MemberID, "app-1", "orders").ErrorCode, "JoinGroup")

	assert.Equal(t, codeUnknownMemberID, heartbeat(t, c, "g", first.MemberID, 2), "without its instance id: an unknown member")
	assert.Equal(t, repeat(codeUnknownMemberID, 1), commit(t, c, "g", first.MemberID, 2, tp{"orders", 0, 5}))
	assert.Equal(t, map[string]int64{"orders-0": -1}, fetchOffsets(t, c, "g", tp{topic: "orders", partition: 0}), "no zombie commit landed")

	cm = commitRequest(8, "g", second.MemberID, 2, tp{"orders", 0, 5})
	cm.InstanceID = &instance
	assert.Equal(t, []int16{codeNone}, wiretest.Commit(t, c, cm))

	groups := describe(t, c, "g")
	require.Len(t, groups[0].Members, 2)
	assert.Equal(t, second.MemberID, groups[0].Members[0].MemberID)
	require.NotNil(t, groups[0].Members[0].InstanceID)
	assert.Equal(t, "app-1", *groups[0].Members[0].InstanceID)
	assert.Nil(t, groups[0].Members[1].InstanceID, "a dynamic member has none")

	changed := staticJoin(t, c, "g", "", "app-1", "orders", "payments")
	require.Equal(t, codeNone, changed.ErrorCode)
	assert.Equal(t, int32(3), changed.Generation, "a restart with another subscription is a new generation")
}

// TestWireStaticLeaveByInstanceID: LeaveGroup v3+ finds a member by its
// instance id when the member id is empty; a member id the instance does
// not hold is FENCED_INSTANCE_ID for that member, which stays.
func TestWireStaticLeaveByInstanceID(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	c := wiretest.Dial(t, b.Addr(), "app")
	first := staticJoin(t, c, "g", "", "app-1", "orders")
	second := staticJoin(t, c, "g", "", "app-1", "orders")
	require.Equal(t, int32(1), second.Generation)
	instance := "app-1"

	req := wiretest.LeaveRequest(5, "g", first.MemberID)
	req.Members[0].InstanceID = &instance
	resp := wiretest.Do[*kmsg.LeaveGroupResponse](t, c, req)
	require.Equal(t, codeNone, resp.ErrorCode)
	require.Len(t, resp.Members, 1)
	assert.Equal(t, codeFencedInstanceID, resp.Members[0].ErrorCode)
	assert.Equal(t, "Stable", describe(t, c, "g")[0].State)

	req = wiretest.LeaveRequest(5, "g", "")
	req.Members[0].InstanceID = &instance
	resp = wiretest.Do[*kmsg.LeaveGroupResponse](t, c, req)
	require.Len(t, resp.Members, 1)
	assert.Equal(t, codeNone, resp.Members[0].ErrorCode)
	assert.Equal(t, second.MemberID, resp.Members[0].MemberID)
	g := describe(t, c, "g")[0]
	assert.Equal(t, "Empty", g.State)
	assert.Empty(t, g.Members)
}

// TestWireStaticMemberKeepsPartitionsUntilItsSessionEnds: a static member
// that goes away without leaving holds its partitions (nobody else gets
// them, the generation stays) until the expiry step ends its session.
func TestWireStaticMemberKeepsPartitionsUntilItsSessionEnds(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	c := wiretest.Dial(t, b.Addr(), "app")
	gone := staticJoin(t, c, "g", "", "app-1", "orders")
	other := join(t, wiretest.Dial(t, b.Addr(), "other"), "g", "orders")
	advance := func(d time.Duration) {
		_, err := b.Advance(d)
		require.NoError(t, err)
	}
	advance(session) // exactly at the static member's deadline
	require.Equal(t, codeNone, heartbeat(t, c, "g", other.MemberID, 2))
	b.Expire()
	assert.Equal(t, []string{"orders-1", "orders-3"}, assignment(t, c, "g", other.MemberID, 2), "nobody took its partitions")
	advance(time.Millisecond)
	b.Expire()
	groups := describe(t, c, "g")
	require.Len(t, groups[0].Members, 1)
	assert.NotEqual(t, gone.MemberID, groups[0].Members[0].MemberID)
	assert.Equal(t, []string{"orders-0", "orders-1", "orders-2", "orders-3"}, assignment(t, c, "g", other.MemberID, 3))
}
