package admin

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/minibroker/minibroker/offsets"
)

// appGroup is the JSON of group "app" after twoMembers, without the
// clock's reading.
const appGroup = `
	"group": "app", "state": "Stable", "generation": 2, "protocol": "", "leader": "a",
	"members": [
		{"member_id": "a", "client_id": "", "client_host": "", "session_timeout_ms": 100,
		 "deadline": "1970-01-01T00:00:00.1Z", "deadline_ms": 100, "subscription": ["orders"],
		 "assignment": [{"topic": "orders", "partitions": [0, 2]}]},
		{"member_id": "b", "client_id": "", "client_host": "", "session_timeout_ms": 200,
		 "deadline": "1970-01-01T00:00:00.24Z", "deadline_ms": 240, "subscription": ["orders", "payments"],
		 "assignment": [{"topic": "orders", "partitions": [1, 3]}, {"topic": "payments", "partitions": [0]}]}
	],
	"ownership": [
		{"topic": "orders", "partition": 0, "owner": "a"},
		{"topic": "orders", "partition": 1, "owner": "b"},
		{"topic": "orders", "partition": 2, "owner": "a"},
		{"topic": "orders", "partition": 3, "owner": "b"},
		{"topic": "payments", "partition": 0, "owner": "b"}
	],
	"committed": [{"topic": "orders", "partition": 0, "offset": 6, "metadata": "m", "leader_epoch": -1}]`

// twoMembers builds group "app": a joins at 0 ms with a 100 ms session,
// b at 40 ms with 200 ms (generation 2), a commits orders-0 at 6, and a
// manual-assignment group "manual" commits orders-1 at 3.
func twoMembers(t *testing.T, f *fixture) {
	t.Helper()
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
		{"group": "manual", "state": "Empty", "generation": 0, "protocol": "", "leader": "",
		 "members": [], "ownership": [],
		 "committed": [{"topic": "orders", "partition": 1, "offset": 3, "metadata": "", "leader_epoch": 7}]}
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
		"group": "app", "state": "Empty", "generation": 3, "protocol": "", "leader": "",
		"members": [], "ownership": [],
		"committed": [{"topic": "orders", "partition": 0, "offset": 6, "metadata": "m", "leader_epoch": -1}]}`, body)
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
