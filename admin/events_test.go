package admin

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/minibroker/minibroker/assignor"
	"github.com/minibroker/minibroker/coordinator"
	"github.com/minibroker/minibroker/server"
)

func TestEventsNone(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	code, body := f.do(t, "GET", "/v1/events", "")
	require.Equal(t, http.StatusOK, code)
	requireJSON(t, `{"rebalances":[],"fencing":[],"topics":[]}`, body)
}

// TestEventsTimeline: rebalances from the coordinator's hook and fencing
// rejections from the server's, in arrival order, with one sequence, the
// coordinator clock's time and the reason for each.
func TestEventsTimeline(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.join(t, "app", "a", 100*time.Millisecond, "orders")
	_, err := f.clock.Advance(5 * time.Millisecond)
	require.NoError(t, err)
	f.rec.Fenced(server.FencingEvent{Group: "app", MemberID: "a", API: "Heartbeat", Generation: 0, Code: 22, Reason: "stale generation"})
	f.join(t, "app", "b", 100*time.Millisecond, "orders")
	f.coord.Leave("app", "a", "b")

	code, body := f.do(t, "GET", "/v1/events", "")
	require.Equal(t, http.StatusOK, code)
	requireJSON(t, `{"rebalances":[
		{"seq":1,"time":"1970-01-01T00:00:00Z","time_ms":0,"group":"app","generation":1,"reason":"join","state":"Stable","members":["a"],
		 "assignment":[{"member_id":"a","partitions":[{"topic":"orders","partitions":[0,1,2,3]}]}]},
		{"seq":3,"time":"1970-01-01T00:00:00.005Z","time_ms":5,"group":"app","generation":2,"reason":"join","state":"Stable","members":["a","b"],
		 "assignment":[{"member_id":"a","partitions":[{"topic":"orders","partitions":[0,2]}]},
		               {"member_id":"b","partitions":[{"topic":"orders","partitions":[1,3]}]}]},
		{"seq":4,"time":"1970-01-01T00:00:00.005Z","time_ms":5,"group":"app","generation":3,"reason":"leave","state":"Empty","members":[],"assignment":[]}
	],"fencing":[
		{"seq":2,"time":"1970-01-01T00:00:00.005Z","time_ms":5,"group":"app","member_id":"a","api":"Heartbeat","generation":0,"code":22,"error":"ILLEGAL_GENERATION",
		 "reason":"stale generation"}
	],"topics":[]}`, body)
}

// TestEventsRingsKeepTheLatest: past its size a ring drops the oldest.
func TestEventsRingsKeepTheLatest(t *testing.T) {
	t.Parallel()
	f := newFixtureWith(t, fixtureOptions{maxRebalances: 3, maxFencing: 2})
	for i := range 7 {
		f.join(t, "app", fmt.Sprintf("m%d", i), time.Second, "orders")
		f.rec.Fenced(server.FencingEvent{Group: "app", MemberID: fmt.Sprintf("m%d", i), API: "OffsetCommit", Generation: int32(i), Code: 27})
	}
	f.rec.mu.Lock()
	rebalances, fencing := f.rec.rebalances.items(), f.rec.fencing.items()
	f.rec.mu.Unlock()
	var gens []int32
	for _, r := range rebalances {
		gens = append(gens, r.Generation)
	}
	require.Equal(t, []int32{5, 6, 7}, gens)
	require.Len(t, fencing, 2)
	require.Equal(t, []string{"m5", "m6"}, []string{fencing[0].MemberID, fencing[1].MemberID})
	require.Equal(t, "REBALANCE_IN_PROGRESS", fencing[1].Error)
}

func TestRing(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		size, pushes int
		want         []int
	}{
		{3, 0, []int{}},
		{3, 2, []int{0, 1}},
		{3, 3, []int{0, 1, 2}},
		{3, 4, []int{1, 2, 3}},
		{3, 8, []int{5, 6, 7}},
		{1, 5, []int{4}},
		{-1, 5, []int{}},
	} {
		t.Run(fmt.Sprintf("size %d pushes %d", tc.size, tc.pushes), func(t *testing.T) {
			r := newRing[int](tc.size, 99)
			for i := range tc.pushes {
				r.push(i)
			}
			require.Equal(t, tc.want, r.items())
		})
	}
	require.Equal(t, 99, newRing[int](0, 99).max)
}

// TestRebalancedOutOfOrder: OnRebalance calls may arrive out of order; the
// gauges follow the highest generation, the counter counts every call.
func TestRebalancedOutOfOrder(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	newer := coordinator.Rebalance{Group: "g", Generation: 5, State: coordinator.Stable, Members: []string{"a", "b"},
		Assignment: map[string][]assignor.TopicPartition{"a": {{Topic: "orders", Partition: 0}}, "b": {}}}
	older := coordinator.Rebalance{Group: "g", Generation: 4, State: coordinator.Stable, Members: []string{"a"}}
	f.rec.Rebalanced(newer)
	f.rec.Rebalanced(older)
	fams := scrape(t, f.srv.Handler())
	require.Equal(t, 5.0, value(fams, "minibroker_group_generation", "group", "g"))
	require.Equal(t, 2.0, value(fams, "minibroker_group_members", "group", "g"))
	require.Equal(t, 2.0, value(fams, "minibroker_rebalances_total", "group", "g"))
}

// TestObserverConcurrent drives every hook from many goroutines; run
// under -race it checks the Server's locking.
func TestObserverConcurrent(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			member := fmt.Sprintf("m%d", i)
			f.rec.ConnOpened(fmt.Sprintf("127.0.0.1:%d", 50000+i))
			_, err := f.coord.Join(coordinator.JoinRequest{Group: "app", MemberID: member, Topics: []string{"orders"}, SessionTimeout: time.Second})
			assert.NoError(t, err)
			f.rec.Fenced(server.FencingEvent{Group: "app", MemberID: member, API: "Heartbeat", Code: 25})
			f.rec.RequestDone(12, 4, 25, time.Millisecond)
			f.rec.CommitDone("app", time.Millisecond, 0)
			remote := fmt.Sprintf("127.0.0.1:%d", 50000+i)
			f.rec.Fetched(server.FetchEvent{Remote: remote, Host: "/127.0.0.1", ClientID: member, Topic: "orders", Partition: 0, FetchOffset: 1})
			for _, path := range []string{"/v1/events", "/v1/groups", "/v1/topics", "/metrics"} {
				rec := httptest.NewRecorder()
				f.srv.Handler().ServeHTTP(rec, newRequest("GET", path, ""))
				assert.Equal(t, http.StatusOK, rec.Code)
			}
			f.rec.ConnClosed(remote)
		})
	}
	wg.Wait()
	fams := scrape(t, f.srv.Handler())
	require.Equal(t, 8.0, value(fams, "minibroker_group_generation", "group", "app"))
	require.Equal(t, 8.0, value(fams, "minibroker_group_members", "group", "app"))
	require.Equal(t, 8.0, value(fams, "minibroker_fencing_rejections_total", "api", "Heartbeat", "error_code", "UNKNOWN_MEMBER_ID"))
	require.Equal(t, 0.0, value(fams, "minibroker_connections"))
	require.Equal(t, 8.0, value(fams, "minibroker_connections_accepted_total"))
	require.Empty(t, positions(f.rec), "every connection closed")
}
