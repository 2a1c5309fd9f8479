package server

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/offsets"
	"github.com/minibroker/minibroker/testkit/wiretest"
)

func TestListGroupsFilters(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.join("c", "b-stable", "", "orders")
	gone := e.join("c", "a-empty", "", "orders")
	call[*kmsg.LeaveGroupResponse](e, "c", wiretest.LeaveRequest(0, "a-empty", gone.MemberID))
	require.NoError(t, e.coord.CommitDirect("c-offsets", []offsets.Entry{{Topic: "orders", Partition: 0, Offset: 1, LeaderEpoch: -1}}))

	tests := []struct {
		name    string
		version int16
		states  []string
		types   []string
		want    []string // group:state
	}{
		{"v0 lists all", 0, nil, nil, []string{"a-empty:Empty", "b-stable:Stable", "c-offsets:Empty"}},
		{"no filter", 4, nil, nil, []string{"a-empty:Empty", "b-stable:Stable", "c-offsets:Empty"}},
		{"stable", 4, []string{"Stable"}, nil, []string{"b-stable:Stable"}},
		{"case-insensitive", 4, []string{"eMPTY"}, nil, []string{"a-empty:Empty", "c-offsets:Empty"}},
		{"two states", 5, []string{"stable", "empty"}, nil, []string{"a-empty:Empty", "b-stable:Stable", "c-offsets:Empty"}},
		{"no such state", 4, []string{"PreparingRebalance"}, nil, nil},
		{"dead is never listed", 4, []string{"Dead"}, nil, nil},
		{"classic type", 5, nil, []string{"Classic"}, []string{"a-empty:Empty", "b-stable:Stable", "c-offsets:Empty"}},
		{"consumer type", 5, nil, []string{"consumer"}, nil},
		{"both filters", 5, []string{"stable"}, []string{"classic", "consumer"}, []string{"b-stable:Stable"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req := kmsg.NewPtrListGroupsRequest()
			req.Version, req.StatesFilter, req.TypesFilter = tc.version, tc.states, tc.types
			resp := call[*kmsg.ListGroupsResponse](e, "c", req)
			assert.Zero(t, resp.ErrorCode)
			var got []string
			for _, g := range resp.Groups {
				got = append(got, g.Group+":"+g.GroupState)
				assert.Equal(t, "consumer", g.ProtocolType)
				assert.Equal(t, "classic", g.GroupType)
			}
			assert.Equal(t, tc.want, got)
		})
	}
}

// TestListGroupsConsumerGroups: KIP-848 groups are listed with type
// "consumer" (protocol type "consumer" too), and Reconciling while a
// member's epoch lags the group epoch, as Kafka's ListGroups v5 lists them.
func TestListGroupsConsumerGroups(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.join("c", "classic", "", "orders")
	e.consumerJoin("kip848", "a", "orders")
	e.consumerJoin("kip848", "b", "orders")

	list := func(states, types []string) []string {
		req := kmsg.NewPtrListGroupsRequest()
		req.Version, req.StatesFilter, req.TypesFilter = 5, states, types
		resp := call[*kmsg.ListGroupsResponse](e, "c", req)
		var got []string
		for _, g := range resp.Groups {
			assert.Equal(t, "consumer", g.ProtocolType)
			got = append(got, g.Group+":"+g.GroupState+":"+g.GroupType)
		}
		return got
	}
	assert.Equal(t, []string{"classic:Stable:classic", "kip848:Reconciling:consumer"}, list(nil, nil))
	assert.Equal(t, []string{"kip848:Reconciling:consumer"}, list(nil, []string{"Consumer"}))
	assert.Equal(t, []string{"kip848:Reconciling:consumer"}, list([]string{"reconciling"}, nil))
	assert.Equal(t, []string{"classic:Stable:classic"}, list([]string{"stable"}, nil))

	call[*kmsg.ConsumerGroupHeartbeatResponse](e, "kgo", consumerHeartbeatRequest(1, "kip848", "a", 1, "orders"))
	assert.Equal(t, []string{"classic:Stable:classic", "kip848:Stable:consumer"}, list([]string{"stable"}, nil))
}
