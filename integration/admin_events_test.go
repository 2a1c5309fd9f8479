package integration

// The admin API watching real wire traffic: every rebalance and every
// fencing rejection is a structured log event, an entry of GET /v1/events
// and a metric.

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/internal/testutil"
	"github.com/minibroker/minibroker/testkit/wiretest"
)

// TestAdminFencingOverTheWire: two members join over the wire, the first
// goes on with its stale generation, and tries a partition it no longer
// owns; the second commits. The log, the event API, the group API and the
// metrics all tell the same story.
func TestAdminFencingOverTheWire(t *testing.T) {
	t.Parallel()
	b := startBroker(t, adminConfig)
	alpha := wiretest.Dial(t, b.Addr(), "alpha")
	beta := wiretest.Dial(t, b.Addr(), "beta")
	a := adminJoin(t, alpha, "g", "", 30*time.Second, "orders") // alpha-000001, generation 1
	bm := adminJoin(t, beta, "g", "", 30*time.Second, "orders") // beta-000002, generation 2
	require.Equal(t, "alpha-000001", a.MemberID)
	require.Equal(t, "beta-000002", bm.MemberID)
	require.Equal(t, int32(2), bm.Generation)

	_, err := b.Advance(10 * time.Millisecond)
	require.NoError(t, err)
	require.Equal(t, kerr.IllegalGeneration.Code, heartbeat(t, alpha, "g", a.MemberID, 1))
	require.Equal(t, kerr.IllegalGeneration.Code, adminCommit(t, alpha, "g", a.MemberID, 1, "orders", 0, 7))
	require.Equal(t, kerr.RebalanceInProgress.Code, adminCommit(t, alpha, "g", a.MemberID, 2, "orders", 1, 7), "orders-1 is beta's")
	require.Zero(t, adminCommit(t, beta, "g", bm.MemberID, 2, "orders", 1, 10))
	require.Zero(t, heartbeat(t, beta, "g", bm.MemberID, 2))

	t.Run("logs", func(t *testing.T) {
		rebalance := func(generation, members, assignment string) testutil.Record {
			return testutil.Record{Level: slog.LevelInfo, Message: "rebalance complete", Attrs: map[string]string{
				"group": "g", "generation": generation, "reason": "join", "state": "Stable",
				"members": members, "assignment": assignment}}
		}
		require.Equal(t, []testutil.Record{
			rebalance("1", "[alpha-000001]", "[alpha-000001: orders-0, orders-1, orders-2, orders-3]"),
			rebalance("2", "[alpha-000001 beta-000002]", "[alpha-000001: orders-0, orders-2 beta-000002: orders-1, orders-3]"),
		}, b.Logs.Find("rebalance complete"))

		fenced := b.Logs.Find("fencing rejection")
		for _, rec := range fenced {
			require.True(t, strings.HasPrefix(rec.Attrs["remote"], "127.0.0.1:"), "logged per connection")
			delete(rec.Attrs, "remote")
		}
		fence := func(api, generation, code, reason string) testutil.Record {
			return testutil.Record{Level: slog.LevelInfo, Message: "fencing rejection", Attrs: map[string]string{
				"group": "g", "member": "alpha-000001", "api": api, "generation": generation,
				"code": code, "reason": reason}}
		}
		require.Equal(t, []testutil.Record{
			fence("Heartbeat", "1", "ILLEGAL_GENERATION", "stale generation"),
			fence("OffsetCommit", "1", "ILLEGAL_GENERATION", "stale generation"),
			fence("OffsetCommit", "2", "REBALANCE_IN_PROGRESS", "not the owner"),
		}, fenced)
	})

	t.Run("events", func(t *testing.T) {
		code, body := adminHTTP(t, "GET", b.adminURL()+"/v1/events", "")
		require.Equal(t, http.StatusOK, code)
		var want bytes.Buffer
		require.NoError(t, json.Compact(&want, []byte(`{"rebalances":[
			{"seq":1,"time":"1970-01-01T00:00:00Z","time_ms":0,"group":"g","generation":1,"reason":"join","state":"Stable",
			 "members":["alpha-000001"],
			 "assignment":[{"member_id":"alpha-000001","partitions":[{"topic":"orders","partitions":[0,1,2,3]}]}]},
			{"seq":2,"time":"1970-01-01T00:00:00Z","time_ms":0,"group":"g","generation":2,"reason":"join","state":"Stable",
			 "members":["alpha-000001","beta-000002"],
			 "assignment":[{"member_id":"alpha-000001","partitions":[{"topic":"orders","partitions":[0,2]}]},
			               {"member_id":"beta-000002","partitions":[{"topic":"orders","partitions":[1,3]}]}]}
		],"fencing":[
			{"seq":3,"time":"1970-01-01T00:00:00.01Z","time_ms":10,"group":"g","member_id":"alpha-000001","api":"Heartbeat","generation":1,"code":22,"error":"ILLEGAL_GENERATION","reason":"stale generation"},
			{"seq":4,"time":"1970-01-01T00:00:00.01Z","time_ms":10,"group":"g","member_id":"alpha-000001","api":"OffsetCommit","generation":1,"code":22,"error":"ILLEGAL_GENERATION","reason":"stale generation"},
			{"seq":5,"time":"1970-01-01T00:00:00.01Z","time_ms":10,"group":"g","member_id":"alpha-000001","api":"OffsetCommit","generation":2,"code":27,"error":"REBALANCE_IN_PROGRESS","reason":"not the owner"}
		],"topics":[]}`)))
		require.Equal(t, want.String()+"\n", body)
	})

	t.Run("group", func(t *testing.T) {
		var g struct {
			State      string `json:"state"`
			Generation int32  `json:"generation"`
			Members    []struct {
				MemberID   string `json:"member_id"`
				ClientID   string `json:"client_id"`
				ClientHost string `json:"client_host"`
				DeadlineMS int64  `json:"deadline_ms"`
			} `json:"members"`
			Committed []struct {
				Topic     string `json:"topic"`
				Partition int32  `json:"partition"`
				Offset    int64  `json:"offset"`
			} `json:"committed"`
		}
		adminGetJSON(t, b.adminURL()+"/v1/groups/g", &g)
		require.Equal(t, "Stable", g.State)
		require.Equal(t, int32(2), g.Generation)
		require.Len(t, g.Members, 2)
		require.Equal(t, "alpha", g.Members[0].ClientID)
		require.Equal(t, "/127.0.0.1", g.Members[0].ClientHost)
		require.Equal(t, int64(30_000), g.Members[0].DeadlineMS, "the stale heartbeat did not renew alpha's lease")
		require.Equal(t, int64(30_010), g.Members[1].DeadlineMS, "beta's heartbeat at 10 ms did")
		require.Len(t, g.Committed, 1)
		require.Equal(t, int64(10), g.Committed[0].Offset)
	})

	t.Run("metrics", func(t *testing.T) {
		fams := adminScrape(t, b.adminURL())
		for name := range fams {
			require.True(t, strings.HasPrefix(name, "minibroker_"), name)
		}
		for _, c := range []struct {
			name   string
			labels []string
			want   float64
		}{
			{"minibroker_requests_total", []string{"api", "JoinGroup", "error_code", "NONE"}, 2},
			{"minibroker_requests_total", []string{"api", "Heartbeat", "error_code", "ILLEGAL_GENERATION"}, 1},
			{"minibroker_requests_total", []string{"api", "Heartbeat", "error_code", "NONE"}, 1},
			{"minibroker_requests_total", []string{"api", "OffsetCommit", "error_code", "ILLEGAL_GENERATION"}, 1},
			{"minibroker_requests_total", []string{"api", "OffsetCommit", "error_code", "REBALANCE_IN_PROGRESS"}, 1},
			{"minibroker_requests_total", []string{"api", "OffsetCommit", "error_code", "NONE"}, 1},
			{"minibroker_request_duration_seconds", []string{"api", "OffsetCommit"}, 3},
			{"minibroker_fencing_rejections_total", []string{"api", "Heartbeat", "error_code", "ILLEGAL_GENERATION"}, 1},
			{"minibroker_fencing_rejections_total", []string{"api", "OffsetCommit", "error_code", "ILLEGAL_GENERATION"}, 1},
			{"minibroker_fencing_rejections_total", []string{"api", "OffsetCommit", "error_code", "REBALANCE_IN_PROGRESS"}, 1},
			{"minibroker_rebalances_total", []string{"group", "g"}, 2},
			{"minibroker_group_generation", []string{"group", "g"}, 2},
			{"minibroker_group_members", []string{"group", "g"}, 2},
			{"minibroker_commit_seconds", nil, 1},
			{"minibroker_connections", nil, 2},
			{"minibroker_connections_accepted_total", nil, 2},
		} {
			require.Equal(t, c.want, adminMetric(fams, c.name, c.labels...), "%s %v", c.name, c.labels)
		}
		require.Len(t, fams["minibroker_requests_total"].GetMetric(), 6, "no other request was made")
		require.Len(t, fams["minibroker_fencing_rejections_total"].GetMetric(), 3)

		alpha.Close()
		eventually(t, func() bool {
			return adminMetric(adminScrape(t, b.adminURL()), "minibroker_connections") == 1
		}, "the closed connection is no longer counted")
	})
}

// TestAdminStaticRestartOverTheWire: a static member's restart over the
// wire is in GET /v1/groups (the member's instance id, and the restart in
// the generation history at the generation it kept) and in GET
// /v1/events, and is no rebalance for the metrics.
func TestAdminStaticRestartOverTheWire(t *testing.T) {
	t.Parallel()
	b := startBroker(t, adminConfig)
	c := wiretest.Dial(t, b.Addr(), "app")
	static := func() *kmsg.JoinGroupResponse {
		req := wiretest.JoinRequest(9, "g", "", 30*time.Second, "orders")
		req.InstanceID = kmsg.StringPtr("app-1")
		resp := wiretest.Do[*kmsg.JoinGroupResponse](t, c, req)
		require.Zero(t, resp.ErrorCode)
		return resp
	}
	first, second := static(), static()
	require.Equal(t, int32(1), second.Generation)

	var g struct {
		Generation int32 `json:"generation"`
		Members    []struct {
			MemberID   string `json:"member_id"`
			InstanceID string `json:"instance_id"`
		} `json:"members"`
		Generations []struct {
			Generation int32  `json:"generation"`
			Reason     string `json:"reason"`
			Replaced   string `json:"replaced"`
			ReplacedBy string `json:"replaced_by"`
		} `json:"generations"`
	}
	adminGetJSON(t, b.adminURL()+"/v1/groups/g", &g)
	require.Equal(t, int32(1), g.Generation)
	require.Len(t, g.Members, 1)
	require.Equal(t, second.MemberID, g.Members[0].MemberID)
	require.Equal(t, "app-1", g.Members[0].InstanceID)
	require.Len(t, g.Generations, 2)
	require.Equal(t, "join", g.Generations[0].Reason)
	require.Equal(t, int32(1), g.Generations[1].Generation)
	require.Equal(t, "static member restarted", g.Generations[1].Reason)
	require.Equal(t, first.MemberID, g.Generations[1].Replaced)
	require.Equal(t, second.MemberID, g.Generations[1].ReplacedBy)
	require.Equal(t, 1.0, adminMetric(adminScrape(t, b.adminURL()), "minibroker_rebalances_total", "group", "g"))
	require.Len(t, b.Logs.Find("static member restarted"), 1)
}
