package server

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/offsets"
	"github.com/minibroker/minibroker/testkit/wiretest"
)

func describeRequest(version int16, groups ...string) *kmsg.DescribeGroupsRequest {
	req := kmsg.NewPtrDescribeGroupsRequest()
	req.Version, req.Groups = version, groups
	return req
}

func TestDescribeGroups(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a := e.join("client-a", "stable", "", "orders")
	b := e.join("client-b", "stable", "", "orders")
	left := e.join("c", "left", "", "orders")
	call[*kmsg.LeaveGroupResponse](e, "c", wiretest.LeaveRequest(3, "left", left.MemberID))
	require.NoError(t, e.coord.CommitDirect("offsets-only", []offsets.Entry{{Topic: "orders", Partition: 0, Offset: 1, LeaderEpoch: -1}}))

	resp := call[*kmsg.DescribeGroupsResponse](e, "c", describeRequest(5, "stable", "left", "offsets-only", "dead"))
	require.Len(t, resp.Groups, 4)
	for _, g := range resp.Groups {
		assert.Zero(t, g.ErrorCode, "%s: v0-5 describe unknown groups as Dead with NONE", g.Group)
		assert.Equal(t, int32(-2147483648), g.AuthorizedOperations, "%s: not asked for", g.Group)
	}

	stable := resp.Groups[0]
	assert.Equal(t, "stable", stable.Group)
	assert.Equal(t, "Stable", stable.State)
	assert.Equal(t, "consumer", stable.ProtocolType)
	assert.Equal(t, "roundrobin", stable.Protocol)
	require.Len(t, stable.Members, 2)
	for i, want := range []struct{ id, client string }{{a.MemberID, "client-a"}, {b.MemberID, "client-b"}} {
		m := stable.Members[i]
		assert.Equal(t, want.id, m.MemberID)
		assert.Equal(t, want.client, m.ClientID)
		assert.Equal(t, "/127.0.0.1", m.ClientHost)
		assert.Equal(t, wiretest.ConsumerMetadata(0, "orders"), m.ProtocolMetadata)
		assert.Nil(t, m.InstanceID)
	}
	assert.Equal(t, []string{"orders-0", "orders-2"}, wiretest.Assignment(t, stable.Members[0].MemberAssignment))
	assert.Equal(t, []string{"orders-1", "orders-3"}, wiretest.Assignment(t, stable.Members[1].MemberAssignment))

	for i, want := range []struct{ group, state, protocolType string }{
		{"left", "Empty", "consumer"},
		{"offsets-only", "Empty", "consumer"},
		{"dead", "Dead", ""},
	} {
		g := resp.Groups[i+1]
		assert.Equal(t, want.group, g.Group)
		assert.Equal(t, want.state, g.State, want.group)
		assert.Equal(t, want.protocolType, g.ProtocolType, want.group)
		assert.Empty(t, g.Protocol, want.group)
		assert.Empty(t, g.Members, want.group)
	}
}

// TestDescribeGroupsConsumerGroupIsDead: DescribeGroups describes classic
// groups; Kafka 4 answers a consumer group as Dead with no members before
// v6 (GroupMetadataManager.describeGroups).
func TestDescribeGroupsConsumerGroupIsDead(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.consumerJoin("kip848", "a", "orders")
	resp := call[*kmsg.DescribeGroupsResponse](e, "c", describeRequest(5, "kip848"))
	require.Len(t, resp.Groups, 1)
	g := resp.Groups[0]
	assert.Zero(t, g.ErrorCode)
	assert.Equal(t, "kip848", g.Group)
	assert.Equal(t, "Dead", g.State)
	assert.Empty(t, g.ProtocolType)
	assert.Empty(t, g.Protocol)
	assert.Empty(t, g.Members)
}

func TestDescribeGroupsInstanceIDs(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	_, current := e.staticRestart("g")
	e.join("kgo", "g", "", "orders") // a dynamic member (v3: joins at once)
	resp := call[*kmsg.DescribeGroupsResponse](e, "kgo", &kmsg.DescribeGroupsRequest{Version: 5, Groups: []string{"g"}})
	require.Len(t, resp.Groups, 1)
	require.Len(t, resp.Groups[0].Members, 2)
	m := resp.Groups[0].Members
	assert.Equal(t, current, m[0].MemberID)
	require.NotNil(t, m[0].InstanceID)
	assert.Equal(t, "a", *m[0].InstanceID)
	assert.Equal(t, "kgo-000003", m[1].MemberID)
	assert.Nil(t, m[1].InstanceID)
	assert.Equal(t, []string{"orders-0", "orders-2"}, wiretest.Assignment(t, m[0].MemberAssignment), "the static member sorts first")
}
