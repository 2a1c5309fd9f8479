package integration

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/testkit/wiretest"
)

// TestWireDescribeGroups: Stable with members (client id, host, the
// metadata they sent, a decodable assignment), Empty, and Dead for a
// group that does not exist (v0-5, error NONE).
func TestWireDescribeGroups(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	alpha, beta := wiretest.Dial(t, b.Addr(), "alpha"), wiretest.Dial(t, b.Addr(), "beta")
	a := join(t, alpha, "stable", "orders", "payments")
	bb := join(t, beta, "stable", "orders")
	gone := join(t, alpha, "empty", "orders")
	require.Equal(t, codeNone, wiretest.Do[*kmsg.LeaveGroupResponse](t, alpha, wiretest.LeaveRequest(5, "empty", gone.MemberID)).ErrorCode)
	require.Equal(t, []int16{0}, commit(t, alpha, "offsets-only", "", -1, tp{"orders", 0, 1}))

	for v := int16(0); v <= 5; v++ {
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) {
			req := kmsg.NewPtrDescribeGroupsRequest()
			req.Version, req.Groups = v, []string{"stable", "empty", "offsets-only", "dead"}
			resp := wiretest.Do[*kmsg.DescribeGroupsResponse](t, alpha, req)
			require.Len(t, resp.Groups, 4)
			for i, g := range resp.Groups {
				assert.Equal(t, req.Groups[i], g.Group)
				assert.Equal(t, codeNone, g.ErrorCode, g.Group)
			}

			stable := resp.Groups[0]
			assert.Equal(t, "Stable", stable.State)
			assert.Equal(t, "consumer", stable.ProtocolType)
			assert.Equal(t, "roundrobin", stable.Protocol)
			require.Len(t, stable.Members, 2)
			want := []struct {
				id, client string
				metadata   []byte
				assignment []string
			}{
				{a.MemberID, "alpha", wiretest.ConsumerMetadata(0, "orders", "payments"), []string{"orders-0", "orders-2", "payments-0"}},
				{bb.MemberID, "beta", wiretest.ConsumerMetadata(0, "orders"), []string{"orders-1", "orders-3"}},
			}
			for i, w := range want {
				m := stable.Members[i]
				assert.Equal(t, w.id, m.MemberID)
				assert.Equal(t, w.client, m.ClientID)
				assert.Equal(t, "/127.0.0.1", m.ClientHost)
				assert.Equal(t, w.metadata, m.ProtocolMetadata)
				assert.Equal(t, w.assignment, wiretest.Assignment(t, m.MemberAssignment))
			}

			for i, w := range []struct{ state, protocolType string }{{"Empty", "consumer"}, {"Empty", "consumer"}, {"Dead", ""}} {
				g := resp.Groups[i+1]
				assert.Equal(t, w.state, g.State, g.Group)
				assert.Equal(t, w.protocolType, g.ProtocolType, g.Group)
				assert.Empty(t, g.Protocol, g.Group)
				assert.Empty(t, g.Members, g.Group)
			}
		})
	}
}

// TestWireListGroups lists every group with its state; v4+ filter by state
// (case-insensitive), v5+ by type ("classic").
func TestWireListGroups(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	c := wiretest.Dial(t, b.Addr(), "c")
	join(t, c, "b-stable", "orders")
	gone := join(t, c, "a-empty", "orders")
	require.Equal(t, codeNone, wiretest.Do[*kmsg.LeaveGroupResponse](t, c, wiretest.LeaveRequest(3, "a-empty", gone.MemberID)).ErrorCode)
	require.Equal(t, []int16{0}, commit(t, c, "c-offsets", "", -1, tp{"orders", 0, 1}))
	all := []string{"a-empty:Empty", "b-stable:Stable", "c-offsets:Empty"}

	tests := []struct {
		version int16
		states  []string
		types   []string
		want    []string
	}{
		{0, nil, nil, []string{"a-empty", "b-stable", "c-offsets"}},
		{3, nil, nil, []string{"a-empty", "b-stable", "c-offsets"}},
		{4, nil, nil, all},
		{4, []string{"Stable"}, nil, []string{"b-stable:Stable"}},
		{4, []string{"EMPTY"}, nil, []string{"a-empty:Empty", "c-offsets:Empty"}},
		{4, []string{"PreparingRebalance", "Dead"}, nil, nil},
		{5, []string{"stable", "empty"}, []string{"classic"}, all},
		{5, nil, []string{"consumer"}, nil},
		{5, []string{"empty"}, []string{"Classic"}, []string{"a-empty:Empty", "c-offsets:Empty"}},
	}
	for _, tc := range tests {
		req := kmsg.NewPtrListGroupsRequest()
		req.Version, req.StatesFilter, req.TypesFilter = tc.version, tc.states, tc.types
		resp := wiretest.Do[*kmsg.ListGroupsResponse](t, c, req)
		assert.Equal(t, codeNone, resp.ErrorCode)
		var got []string
		for _, g := range resp.Groups {
			assert.Equal(t, "consumer", g.ProtocolType)
			if tc.version >= 4 {
				got = append(got, g.Group+":"+g.GroupState)
			} else {
				got = append(got, g.Group)
			}
			if tc.version >= 5 {
				assert.Equal(t, "classic", g.GroupType)
			}
		}
		assert.Equal(t, tc.want, got, "v%d states %v types %v", tc.version, tc.states, tc.types)
	}
}
