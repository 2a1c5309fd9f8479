package admin

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/minibroker/minibroker/coordinator"
	"github.com/minibroker/minibroker/offsets"
)

// appGroup is the JSON of group "app" after twoMembers, without the
// clock's reading. a joined generation 1 and was not told of b's join:
// it knows generation 1.
const appGroup = `
	"group": "app", "type": "classic", "state": "Stable", "generation": 2, "protocol": "", "leader": "a",
	"members": [
		{"member_id": "a", "client_id": "", "client_host": "", "session_timeout_ms": 100,
		 "deadline": "1970-01-01T00:00:00.1Z", "deadline_ms": 100, "subscription": ["orders"],
		 "assignment": [{"topic": "orders", "partitions": [0, 2]}],
		 "known_generation": 1},
		{"member_id": "b", "client_id": "", "client_host": "", "session_timeout_ms": 200,
		 "deadline": "1970-01-01T00:00:00.24Z", "deadline_ms": 240, "subscription": ["orders", "payments"],
		 "assignment": [{"topic": "orders", "partitions": [1, 3]}, {"topic": "payments", "partitions": [0]}],
		 "known_generation": 2}
	],
	"ownership": [
		{"topic": "orders", "partition": 0, "owner": "a"},
		{"topic": "orders", "partition": 1, "owner": "b"},
		{"topic": "orders", "partition": 2, "owner": "a"},
		{"topic": "orders", "partition": 3, "owner": "b"},
		{"topic": "payments", "partition": 0, "owner": "b"}
	],
	"committed": [{"topic": "orders", "partition": 0, "offset": 6, "metadata": "m", "leader_epoch": -1}],
	"partitions": [
		{"topic": "orders", "partition": 0, "log_start_offset": 0, "log_end_offset": 10, "owner": "a",
		 "fetch_positions": [], "committed": 6, "lag": 4},
		{"topic": "orders", "partition": 1, "log_start_offset": 0, "log_end_offset": 2, "owner": "b",
		 "fetch_positions": [], "committed": null, "lag": null},
		{"topic": "orders", "partition": 2, "log_start_offset": 0, "log_end_offset": 0, "owner": "a",
		 "fetch_positions": [], "committed": null, "lag": null},
		{"topic": "orders", "partition": 3, "log_start_offset": 0, "log_end_offset": 0, "owner": "b",
		 "fetch_positions": [], "committed": null, "lag": null},
		{"topic": "payments", "partition": 0, "log_start_offset": 0, "log_end_offset": 0, "owner": "b",
		 "fetch_positions": [], "committed": null, "lag": null}
	],
	"total_lag": 4,
	"last_activity": {"kind": "rebalance", "seq": 2, "time": "1970-01-01T00:00:00.04Z", "time_ms": 40},
	"double_ownership": {"partitions": null, "by": "", "reason": "no connection with a member's client id fetched the group's partitions in the last 10s", "window_ms": 10000, "doubly_owned": []},
	"generations": [
		{"generation": 1, "reason": "join", "seq": 1, "time": "1970-01-01T00:00:00Z", "time_ms": 0},
		{"generation": 2, "reason": "join", "seq": 2, "time": "1970-01-01T00:00:00.04Z", "time_ms": 40}
	]`

// twoMembers builds group "app": a joins at 0 ms with a 100 ms session,
// b at 40 ms with 200 ms (generation 2), a commits orders-0 at 6, and a
// manual-assignment group "manual" commits orders-1 at 3. orders-0 holds
// 10 records, orders-1 two.
func twoMembers(t *testing.T, f *fixture) {
	t.Helper()
	f.produce(t, "orders", 0, 10)
	f.produce(t, "orders", 1, 2)
	f.join(t, "app", "a", 100*time.Millisecond, "orders")
	_, err := f.clock.Advance(40 * time.Millisecond)
	require.NoError(t, err)
	res := f.join(t, "app", "b", 200*time.Millisecond, "payments", "orders")
	require.NoError(t, f.coord.Commit("app", "a", res.Generation, []offsets.Entry{
		{Topic: "orders", Partition: 0, Offset: 6, Metadata: "m", LeaderEpoch: offsets.NoLeaderEpoch},
	}))
	require.NoError(t, f.coord.CommitDirect("manual", []offsets.Entry{
		{Topic: "orders", Partition: 1, Offset: 3, LeaderEpoch: 7},
	}))
}

func TestGroupsNone(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	code, body := f.do(t, "GET", "/v1/groups", "")
	require.Equal(t, http.StatusOK, code)
	requireJSON(t, `{"now": "1970-01-01T00:00:00Z", "now_ms": 0, "clock": "manual", "groups": []}`, body)
}

func TestGroupsListsEveryGroupInDetail(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	twoMembers(t, f)
	code, body := f.do(t, "GET", "/v1/groups", "")
	require.Equal(t, http.StatusOK, code)
	requireJSON(t, `{"now": "1970-01-01T00:00:00.04Z", "now_ms": 40, "clock": "manual", "groups": [
		{`+appGroup+`},
		{"group": "manual", "type": "classic", "state": "Empty", "generation": 0, "protocol": "", "leader": "",
		 "members": [], "ownership": [],
		 "committed": [{"topic": "orders", "partition": 1, "offset": 3, "metadata": "", "leader_epoch": 7}],
		 "partitions": [
			{"topic": "orders", "partition": 0, "log_start_offset": 0, "log_end_offset": 10, "owner": "",
			 "fetch_positions": [], "committed": null, "lag": null},
			{"topic": "orders", "partition": 1, "log_start_offset": 0, "log_end_offset": 2, "owner": "",
			 "fetch_positions": [], "committed": 3, "lag": -1},
			{"topic": "orders", "partition": 2, "log_start_offset": 0, "log_end_offset": 0, "owner": "",
			 "fetch_positions": [], "committed": null, "lag": null},
			{"topic": "orders", "partition": 3, "log_start_offset": 0, "log_end_offset": 0, "owner": "",
			 "fetch_positions": [], "committed": null, "lag": null}
		 ],
		 "total_lag": -1,
		 "last_activity": null, "double_ownership": {"partitions": 0, "by": "member", "window_ms": 10000, "doubly_owned": []}, "generations": []}
	]}`, body)
}

func TestGroupOne(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	twoMembers(t, f)
	code, body := f.do(t, "GET", "/v1/groups/app", "")
	require.Equal(t, http.StatusOK, code)
	requireJSON(t, `{"now": "1970-01-01T00:00:00.04Z", "now_ms": 40, `+appGroup+`}`, body)
}

// TestGroupAfterExpiry: a group that lost its last member stays, Empty,
// with its generation and its offsets (docs/design.md section 2).
func TestGroupAfterExpiry(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	twoMembers(t, f)
	_, err := f.clock.Advance(time.Second)
	require.NoError(t, err)
	require.Len(t, f.coord.Expire(), 2)
	code, body := f.do(t, "GET", "/v1/groups/app", "")
	require.Equal(t, http.StatusOK, code)
	requireJSON(t, `{"now": "1970-01-01T00:00:01.04Z", "now_ms": 1040,
		"group": "app", "type": "classic", "state": "Empty", "generation": 3, "protocol": "", "leader": "",
		"members": [], "ownership": [],
		"committed": [{"topic": "orders", "partition": 0, "offset": 6, "metadata": "m", "leader_epoch": -1}],
		"partitions": [
			{"topic": "orders", "partition": 0, "log_start_offset": 0, "log_end_offset": 10, "owner": "",
			 "fetch_positions": [], "committed": 6, "lag": 4},
			{"topic": "orders", "partition": 1, "log_start_offset": 0, "log_end_offset": 2, "owner": "",
			 "fetch_positions": [], "committed": null, "lag": null},
			{"topic": "orders", "partition": 2, "log_start_offset": 0, "log_end_offset": 0, "owner": "",
			 "fetch_positions": [], "committed": null, "lag": null},
			{"topic": "orders", "partition": 3, "log_start_offset": 0, "log_end_offset": 0, "owner": "",
			 "fetch_positions": [], "committed": null, "lag": null}
		],
		"total_lag": 4,
		"last_activity": {"kind": "rebalance", "seq": 3, "time": "1970-01-01T00:00:01.04Z", "time_ms": 1040},
		"double_ownership": {"partitions": 0, "by": "member", "window_ms": 10000, "doubly_owned": []},
		"generations": [
			{"generation": 1, "reason": "join", "seq": 1, "time": "1970-01-01T00:00:00Z", "time_ms": 0},
			{"generation": 2, "reason": "join", "seq": 2, "time": "1970-01-01T00:00:00.04Z", "time_ms": 40},
			{"generation": 3, "reason": "expiry", "seq": 3, "time": "1970-01-01T00:00:01.04Z", "time_ms": 1040}
		]}`, body)
}

// consumerGroup builds consumer (KIP-848) group "cg" the way the
// rebalance-848 lab does: a joins (epoch 1, all of orders), b joins
// (group epoch 2: a keeps orders-0 and orders-2, b gets orders-1 and
// orders-3), a's heartbeat moves it to epoch 2, then b leaves (group
// epoch 3): a's target is all of orders, but until its next heartbeat it
// holds only what it had.
func consumerGroup(t *testing.T, f *fixture) {
	t.Helper()
	uniform := coordinator.UniformAssignor
	beat := func(member string, epoch int32, topics ...string) {
		t.Helper()
		req := coordinator.ConsumerHeartbeatRequest{Group: "cg", MemberID: member, MemberEpoch: epoch, Topics: topics}
		if epoch == coordinator.JoinEpoch {
			req.Assignor = &uniform
		}
		_, err := f.coord.ConsumerHeartbeat(req)
		require.NoError(t, err)
	}
	beat("a", coordinator.JoinEpoch, "orders")
	beat("b", coordinator.JoinEpoch, "orders")
	beat("a", 1)
	beat("b", coordinator.LeaveEpoch)
}

// TestGroupConsumerProtocol: a consumer group shows its type, its group
// and assignment epochs and its assignor; each member its epoch, what it
// holds and its share of the target; the ownership grid who holds each
// partition and who the target gives it to.
func TestGroupConsumerProtocol(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	consumerGroup(t, f)
	code, body := f.do(t, "GET", "/v1/groups/cg", "")
	require.Equal(t, http.StatusOK, code)
	requireJSON(t, `{"now": "1970-01-01T00:00:00Z", "now_ms": 0,
		"group": "cg", "type": "consumer", "state": "Reconciling", "generation": 3, "protocol": "", "leader": "",
		"group_epoch": 3, "assignment_epoch": 3, "assignor": "uniform",
		"members": [
			{"member_id": "a", "client_id": "", "client_host": "", "session_timeout_ms": 45000,
			 "deadline": "1970-01-01T00:00:45Z", "deadline_ms": 45000, "subscription": ["orders"],
			 "assignment": [{"topic": "orders", "partitions": [0, 2]}],
			 "member_epoch": 2,
			 "target_assignment": [{"topic": "orders", "partitions": [0, 1, 2, 3]}]}
		],
		"ownership": [
			{"topic": "orders", "partition": 0, "owner": "a", "target": "a"},
			{"topic": "orders", "partition": 1, "owner": "", "target": "a"},
			{"topic": "orders", "partition": 2, "owner": "a", "target": "a"},
			{"topic": "orders", "partition": 3, "owner": "", "target": "a"}
		],
		"committed": [],
		"partitions": [
			{"topic": "orders", "partition": 0, "log_start_offset": 0, "log_end_offset": 0, "owner": "a", "target": "a",
			 "fetch_positions": [], "committed": null, "lag": null},
			{"topic": "orders", "partition": 1, "log_start_offset": 0, "log_end_offset": 0, "owner": "", "target": "a",
			 "fetch_positions": [], "committed": null, "lag": null},
			{"topic": "orders", "partition": 2, "log_start_offset": 0, "log_end_offset": 0, "owner": "a", "target": "a",
			 "fetch_positions": [], "committed": null, "lag": null},
			{"topic": "orders", "partition": 3, "log_start_offset": 0, "log_end_offset": 0, "owner": "", "target": "a",
			 "fetch_positions": [], "committed": null, "lag": null}
		],
		"total_lag": null,
		"last_activity": {"kind": "rebalance", "seq": 3, "time": "1970-01-01T00:00:00Z", "time_ms": 0},
		"double_ownership": {"partitions": null, "by": "", "reason": "no connection with a member's client id fetched the group's partitions in the last 10s", "window_ms": 10000, "doubly_owned": []},
		"generations": [
			{"generation": 1, "reason": "join", "seq": 1, "time": "1970-01-01T00:00:00Z", "time_ms": 0},
			{"generation": 2, "reason": "join", "seq": 2, "time": "1970-01-01T00:00:00Z", "time_ms": 0},
			{"generation": 3, "reason": "leave", "seq": 3, "time": "1970-01-01T00:00:00Z", "time_ms": 0}
		]}`, body)

	// Its heartbeat catches a up: Stable, target and assignment the same.
	_, err := f.coord.ConsumerHeartbeat(coordinator.ConsumerHeartbeatRequest{Group: "cg", MemberID: "a", MemberEpoch: 2})
	require.NoError(t, err)
	_, body = f.do(t, "GET", "/v1/groups", "")
	var list struct {
		Groups []struct {
			Type       string
			State      string
			GroupEpoch int32 `json:"group_epoch"`
			Members    []struct {
				MemberEpoch      int32 `json:"member_epoch"`
				Assignment       []topicPartitionsJSON
				TargetAssignment []topicPartitionsJSON `json:"target_assignment"`
			}
		}
	}
	require.NoError(t, json.Unmarshal([]byte(body), &list))
	require.Len(t, list.Groups, 1)
	g := list.Groups[0]
	require.Equal(t, "consumer", g.Type)
	require.Equal(t, "Stable", g.State)
	require.Equal(t, int32(3), g.GroupEpoch)
	require.Equal(t, int32(3), g.Members[0].MemberEpoch)
	require.Equal(t, g.Members[0].TargetAssignment, g.Members[0].Assignment)
}

// TestGroupClassicHasNoConsumerFields: the consumer-group fields are
// absent from a classic group and its members, not zero.
func TestGroupClassicHasNoConsumerFields(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	twoMembers(t, f)
	_, body := f.do(t, "GET", "/v1/groups/app", "")
	for _, field := range []string{"group_epoch", "assignment_epoch", "assignor", "member_epoch", "target_assignment", `"target"`} {
		require.NotContains(t, body, field)
	}
}

func TestGroupNotFound(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	code, body := f.do(t, "GET", "/v1/groups/nobody", "")
	require.Equal(t, http.StatusNotFound, code)
	requireJSON(t, `{"error": "group \"nobody\" not found"}`, body)
}

// TestRoutes checks the status of each method and path the mux knows, and
// of some it does not.
func TestRoutes(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.join(t, "app", "a", time.Second, "orders")
	for _, tc := range []struct {
		method, path string
		want         int
	}{
		{"GET", "/", http.StatusOK},
		{"GET", "/v1/groups", http.StatusOK},
		{"GET", "/v1/groups/app", http.StatusOK},
		{"GET", "/v1/events", http.StatusOK},
		{"GET", "/v1/topics", http.StatusOK},
		{"GET", "/v1/storage", http.StatusOK},
		{"GET", "/metrics", http.StatusOK},
		{"POST", "/v1/expire", http.StatusOK},
		{"HEAD", "/v1/groups", http.StatusOK},
		{"POST", "/v1/groups", http.StatusMethodNotAllowed},
		{"DELETE", "/v1/groups/app", http.StatusConflict}, // it has a member
		{"DELETE", "/v1/groups", http.StatusMethodNotAllowed},
		{"PUT", "/v1/groups/app", http.StatusMethodNotAllowed},
		{"GET", "/v1/expire", http.StatusMethodNotAllowed},
		{"GET", "/v1/clock/advance", http.StatusMethodNotAllowed},
		{"PUT", "/v1/events", http.StatusMethodNotAllowed},
		{"POST", "/metrics", http.StatusMethodNotAllowed},
		{"GET", "/index.html", http.StatusNotFound},
		{"GET", "/v1/groups/app/members", http.StatusNotFound},
		{"GET", "/v2/groups", http.StatusNotFound},
	} {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			code, _ := f.do(t, tc.method, tc.path, "")
			require.Equal(t, tc.want, code)
		})
	}
}

// TestGroupStaticMemberRestart: /v1/groups shows a static member's
// instance id, and its restart in the generation history at the
// generation it kept; the restart is no rebalance for the metrics.
func TestGroupStaticMemberRestart(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	static := coordinator.JoinRequest{Group: "app", InstanceID: "app-1", ClientID: "kgo", SessionTimeout: time.Second,
		ProtocolType: coordinator.ConsumerProtocolType, WireRules: true, RequireMemberID: true,
		Protocols: []coordinator.Protocol{{Name: "range", Topics: []string{"orders"}}}}
	for range 2 {
		_, err := f.coord.Join(static)
		require.NoError(t, err)
	}
	_, body := f.do(t, "GET", "/v1/groups/app", "")
	var g struct {
		Generation int32 `json:"generation"`
		Members    []struct {
			MemberID   string `json:"member_id"`
			InstanceID string `json:"instance_id"`
		} `json:"members"`
		Generations []generationJSON `json:"generations"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &g))
	require.Equal(t, int32(1), g.Generation)
	require.Len(t, g.Members, 1)
	require.Equal(t, "app-1-000002", g.Members[0].MemberID)
	require.Equal(t, "app-1", g.Members[0].InstanceID)
	zero := "1970-01-01T00:00:00Z"
	require.Equal(t, []generationJSON{
		{Generation: 1, Reason: "join", Seq: 1, Time: zero},
		{Generation: 1, Reason: "static member restarted", Seq: 2, Time: zero, Replaced: "app-1-000001", ReplacedBy: "app-1-000002"},
	}, g.Generations)
	require.Equal(t, 1.0, value(scrape(t, f.srv.Handler()), "minibroker_rebalances_total", "group", "app"))
}

// TestGroupTotalLag: total_lag sums the partitions' lags as
// minibroker_group_lag does: a commit past the log end counts negative, a
// reset sentinel not at all, a partition without a commit not at all;
// null while no partition has a lag.
func TestGroupTotalLag(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.produce(t, "orders", 0, 10)
	f.produce(t, "orders", 1, 2)
	res := f.join(t, "app", "a", time.Minute, "orders")
	totalLag := func() *int64 {
		t.Helper()
		code, body := f.do(t, "GET", "/v1/groups/app", "")
		require.Equal(t, http.StatusOK, code, body)
		var g struct {
			TotalLag *int64 `json:"total_lag"`
		}
		require.NoError(t, json.Unmarshal([]byte(body), &g))
		return g.TotalLag
	}
	require.Nil(t, totalLag(), "nothing committed: no lag at all, not 0")
	require.NoError(t, f.coord.Commit("app", "a", res.Generation, []offsets.Entry{
		{Topic: "orders", Partition: 0, Offset: 6, LeaderEpoch: offsets.NoLeaderEpoch},
		{Topic: "orders", Partition: 1, Offset: 5, LeaderEpoch: offsets.NoLeaderEpoch},
		{Topic: "orders", Partition: 2, Offset: offsets.ResetEarliest, LeaderEpoch: offsets.NoLeaderEpoch},
	}))
	lag := totalLag()
	require.NotNil(t, lag)
	require.Equal(t, int64(1), *lag, "(10-6) + (2-5)")
	require.Equal(t, 1.0, value(scrape(t, f.srv.Handler()), "minibroker_group_lag", "group", "app"), "the metric's figure")
}
