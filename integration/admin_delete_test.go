package integration

// Deleting groups through the admin API, and what deletion does to
// /metrics: a group's series go with it, whether DeleteGroups over the
// wire, DELETE /v1/groups/{group} or retention deleted it.

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/broker"
	"github.com/minibroker/minibroker/testkit/wiretest"
)

// TestAdminDeleteGroupAndMetrics: four groups rebalance; one is deleted
// over the wire, one with DELETE, one by retention; each one's three
// series disappear from /metrics, and the group with members keeps its
// series and refuses DELETE with 409.
func TestAdminDeleteGroupAndMetrics(t *testing.T) {
	t.Parallel()
	b := startBroker(t, adminConfig, func(cfg *broker.Config) { cfg.OffsetsRetention = time.Minute })
	c := wiretest.Dial(t, b.Addr(), "c")
	kept := adminJoin(t, c, "kept", "", 5*time.Minute, "orders") // outlives the retention
	for _, g := range []string{"wire", "http", "retained"} {
		j := adminJoin(t, c, g, "", 30*time.Second, "orders")
		leave := kmsg.NewPtrLeaveGroupRequest()
		leave.Version, leave.Group, leave.Members = 5, g, []kmsg.LeaveGroupRequestMember{{MemberID: j.MemberID}}
		require.Zero(t, wiretest.Do[*kmsg.LeaveGroupResponse](t, c, leave).ErrorCode)
	}
	series := []string{"minibroker_rebalances_total", "minibroker_group_generation", "minibroker_group_members"}
	fams := adminScrape(t, b.adminURL())
	for _, g := range []string{"kept", "wire", "http", "retained"} {
		for _, name := range series {
			require.NotEqual(t, -1.0, adminMetric(fams, name, "group", g), "%s{group=%q}", name, g)
		}
	}
	assert.Equal(t, 2.0, adminMetric(fams, "minibroker_group_generation", "group", "http"))

	del := kmsg.NewPtrDeleteGroupsRequest()
	del.Version, del.Groups = 2, []string{"wire"}
	require.Zero(t, wiretest.Do[*kmsg.DeleteGroupsResponse](t, c, del).Groups[0].ErrorCode)

	code, body := adminHTTP(t, "DELETE", b.adminURL()+"/v1/groups/http", "")
	require.Equal(t, http.StatusOK, code, body)
	assert.JSONEq(t, `{"group":"http","deleted":true}`, body)
	code, body = adminHTTP(t, "DELETE", b.adminURL()+"/v1/groups/kept", "")
	assert.Equal(t, http.StatusConflict, code)
	assert.Contains(t, body, "has members")
	code, _ = adminHTTP(t, "DELETE", b.adminURL()+"/v1/groups/http", "")
	assert.Equal(t, http.StatusNotFound, code)

	_, err := b.Advance(time.Minute)
	require.NoError(t, err)
	b.Expire()

	fams = adminScrape(t, b.adminURL())
	for _, g := range []string{"wire", "http", "retained"} {
		for _, name := range series {
			assert.Equal(t, -1.0, adminMetric(fams, name, "group", g), "%s{group=%q} is gone", name, g)
		}
	}
	assert.Equal(t, 1.0, adminMetric(fams, "minibroker_group_members", "group", "kept"))
	assert.Equal(t, float64(kept.Generation), adminMetric(fams, "minibroker_group_generation", "group", "kept"))

	var groups struct {
		Groups []struct {
			Group string `json:"group"`
		} `json:"groups"`
	}
	adminGetJSON(t, b.adminURL()+"/v1/groups", &groups)
	require.Len(t, groups.Groups, 1)
	assert.Equal(t, "kept", groups.Groups[0].Group)
}

// TestAdminDeleteNeedsJSON: a DELETE that is not JSON is refused (415)
// and deletes nothing.
func TestAdminDeleteNeedsJSON(t *testing.T) {
	t.Parallel()
	b := startBroker(t, adminConfig)
	c := wiretest.Dial(t, b.Addr(), "c")
	require.Zero(t, adminCommit(t, c, "manual", "", -1, "orders", 0, 3))
	req, err := http.NewRequestWithContext(t.Context(), "DELETE", b.adminURL()+"/v1/groups/manual", nil)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusUnsupportedMediaType, resp.StatusCode)
	_, ok := b.Coordinator().Describe("manual")
	assert.True(t, ok, "nothing was deleted")
}
