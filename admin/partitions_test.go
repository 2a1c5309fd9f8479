package admin

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/minibroker/minibroker/coordinator"
	"github.com/minibroker/minibroker/offsets"
	"github.com/minibroker/minibroker/server"
)

// joinFrom joins member to group as a client with clientID on host would.
func (f *fixture) joinFrom(t *testing.T, group, member, clientID, host string, topics ...string) coordinator.JoinResult {
	t.Helper()
	res, err := f.coord.Join(coordinator.JoinRequest{Group: group, MemberID: member, ClientID: clientID, ClientHost: host,
		Topics: topics, SessionTimeout: time.Minute})
	require.NoError(t, err)
	return res
}

// fetch reports one partition of a Fetch from the connection at remote.
func (f *fixture) fetch(remote, clientID, topic string, partition int32, offset int64) {
	host := "/" + remote[:len(remote)-len(":50001")]
	f.rec.Fetched(server.FetchEvent{Remote: remote, Host: host, ClientID: clientID, Topic: topic, Partition: partition, FetchOffset: offset})
}

// partitionsOf returns the "partitions" field of GET /v1/groups/{group}.
func (f *fixture) partitionsOf(t *testing.T, group string) string {
	t.Helper()
	code, body := f.do(t, "GET", "/v1/groups/"+group, "")
	require.Equal(t, http.StatusOK, code, body)
	var g struct {
		Partitions json.RawMessage `json:"partitions"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &g))
	return string(g.Partitions) + "\n"
}

// TestGroupPartitionsFourStates: per partition, the log's offsets, the
// owner, the fetch positions and the commit with its lag. A connection's
// position is attributed to the one member with its client id and host;
// two members with the same client id and host, or none on the
// connection's host, leave it unattributed with the reason; a connection
// whose client id no member has is not the group's.
func TestGroupPartitionsFourStates(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.produce(t, "orders", 0, 10)
	f.produce(t, "payments", 0, 3)
	f.joinFrom(t, "app", "solo-1", "solo", "/127.0.0.1", "orders")
	f.joinFrom(t, "app", "twin-1", "twin", "/127.0.0.1", "orders")
	res := f.joinFrom(t, "app", "twin-2", "twin", "/127.0.0.1", "orders", "payments")
	// solo-1 holds orders-0 and -3, twin-1 orders-1, twin-2 orders-2 and payments-0.
	require.NoError(t, f.coord.Commit("app", "solo-1", res.Generation, []offsets.Entry{
		{Topic: "orders", Partition: 0, Offset: 6, LeaderEpoch: offsets.NoLeaderEpoch},
	}))

	f.fetch("127.0.0.1:50001", "solo", "orders", 0, 5)
	_, err := f.clock.Advance(150 * time.Millisecond)
	require.NoError(t, err)
	f.fetch("127.0.0.1:50001", "solo", "orders", 0, 6)   // the same connection moves on
	f.fetch("127.0.0.2:50002", "solo", "orders", 0, 2)   // solo's client id, another host
	f.fetch("127.0.0.1:50003", "twin", "orders", 1, 0)   // one of the twins
	f.fetch("127.0.0.1:50004", "other", "orders", 0, 9)  // nobody's in this group
	f.fetch("127.0.0.1:50003", "twin", "payments", 0, 3) // a partition with no commit
	_, err = f.clock.Advance(100 * time.Millisecond)
	require.NoError(t, err)

	requireJSON(t, `[
		{"topic": "orders", "partition": 0, "log_start_offset": 0, "log_end_offset": 10, "owner": "solo-1",
		 "fetch_positions": [
			{"member_id": "solo-1", "client_id": "solo", "remote": "127.0.0.1:50001", "offset": 6,
			 "time": "1970-01-01T00:00:00.15Z", "time_ms": 150, "age_ms": 100},
			{"unattributed": "no member with client id solo is on /127.0.0.2", "client_id": "solo", "remote": "127.0.0.2:50002",
			 "offset": 2, "time": "1970-01-01T00:00:00.15Z", "time_ms": 150, "age_ms": 100}
		 ],
		 "committed": 6, "lag": 4},
		{"topic": "orders", "partition": 1, "log_start_offset": 0, "log_end_offset": 0, "owner": "twin-1",
		 "fetch_positions": [
			{"unattributed": "2 members share client id twin on /127.0.0.1", "client_id": "twin", "remote": "127.0.0.1:50003",
			 "offset": 0, "time": "1970-01-01T00:00:00.15Z", "time_ms": 150, "age_ms": 100}
		 ],
		 "committed": null, "lag": null},
		{"topic": "orders", "partition": 2, "log_start_offset": 0, "log_end_offset": 0, "owner": "twin-2",
		 "fetch_positions": [], "committed": null, "lag": null},
		{"topic": "orders", "partition": 3, "log_start_offset": 0, "log_end_offset": 0, "owner": "solo-1",
		 "fetch_positions": [], "committed": null, "lag": null},
		{"topic": "payments", "partition": 0, "log_start_offset": 0, "log_end_offset": 3, "owner": "twin-2",
		 "fetch_positions": [
			{"unattributed": "2 members share client id twin on /127.0.0.1", "client_id": "twin", "remote": "127.0.0.1:50003",
			 "offset": 3, "time": "1970-01-01T00:00:00.15Z", "time_ms": 150, "age_ms": 100}
		 ],
		 "committed": null, "lag": null}
	]`, f.partitionsOf(t, "app"))

	// Once twin-1 has left, twin-2 is the one member with client id twin.
	f.coord.Leave("app", "twin-1")
	require.Contains(t, f.partitionsOf(t, "app"),
		`{"member_id":"twin-2","client_id":"twin","remote":"127.0.0.1:50003","offset":3,"time":"1970-01-01T00:00:00.15Z","time_ms":150,"age_ms":100}`)
}

// TestTopics: every topic in the catalog, each partition with its log's
// offsets and size and every connection's fetch position, whatever its
// group.
func TestTopics(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	size := f.produce(t, "orders", 2, 4)
	f.fetch("127.0.0.1:50001", "reader", "orders", 2, 1)
	f.fetch("127.0.0.1:50002", "another", "orders", 2, 4)
	_, err := f.clock.Advance(7 * time.Millisecond)
	require.NoError(t, err)
	code, body := f.do(t, "GET", "/v1/topics", "")
	require.Equal(t, http.StatusOK, code)
	requireJSON(t, fmt.Sprintf(`{"now": "1970-01-01T00:00:00.007Z", "now_ms": 7, "topics": [
		{"topic": "orders", "partitions": [
			{"partition": 0, "log_start_offset": 0, "log_end_offset": 0, "last_stable_offset": 0, "bytes": 0, "fetch_positions": []},
			{"partition": 1, "log_start_offset": 0, "log_end_offset": 0, "last_stable_offset": 0, "bytes": 0, "fetch_positions": []},
			{"partition": 2, "log_start_offset": 0, "log_end_offset": 4, "last_stable_offset": 4, "bytes": %d, "fetch_positions": [
				{"client_id": "another", "remote": "127.0.0.1:50002", "offset": 4, "time": "1970-01-01T00:00:00Z", "time_ms": 0, "age_ms": 7},
				{"client_id": "reader", "remote": "127.0.0.1:50001", "offset": 1, "time": "1970-01-01T00:00:00Z", "time_ms": 0, "age_ms": 7}
			]},
			{"partition": 3, "log_start_offset": 0, "log_end_offset": 0, "last_stable_offset": 0, "bytes": 0, "fetch_positions": []}
		]},
		{"topic": "payments", "partitions": [
			{"partition": 0, "log_start_offset": 0, "log_end_offset": 0, "last_stable_offset": 0, "bytes": 0, "fetch_positions": []}
		]}
	]}`, size), body)
}

// TestTopicsConfigs: a topic's own configs are listed beside it; a topic
// without any has none.
func TestTopicsConfigs(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	_, err := f.catalog.SetConfigs("payments", map[string]string{"retention.bytes": "4096", "segment.bytes": "1048576"}, nil)
	require.NoError(t, err)
	code, body := f.do(t, "GET", "/v1/topics", "")
	require.Equal(t, http.StatusOK, code)
	var got struct {
		Topics []struct {
			Topic   string            `json:"topic"`
			Configs map[string]string `json:"configs"`
		} `json:"topics"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &got))
	require.Len(t, got.Topics, 2)
	require.Equal(t, "orders", got.Topics[0].Topic)
	require.Nil(t, got.Topics[0].Configs)
	require.Equal(t, map[string]string{"retention.bytes": "4096", "segment.bytes": "1048576"}, got.Topics[1].Configs)
	require.NotContains(t, body[:strings.Index(body, `"payments"`)], `"configs"`)
}

// TestLogOffsetsWithoutALog: a Server without a Log shows its offsets as
// null and has no lag.
func TestLogOffsetsWithoutALog(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	srv, err := New(Config{Coordinator: f.coord, Catalog: f.catalog, Recorder: f.rec, Clock: f.clock})
	require.NoError(t, err)
	require.NoError(t, f.coord.CommitDirect("manual", []offsets.Entry{{Topic: "payments", Partition: 0, Offset: 3}}))
	f.srv = srv
	requireJSON(t, `[{"topic": "payments", "partition": 0, "log_start_offset": null, "log_end_offset": null, "owner": "",
		"fetch_positions": [], "committed": 3, "lag": null}]`, f.partitionsOf(t, "manual"))
}

// TestResetSentinelHasNoLag: a committed -2 or -1 (what kafkajs commits
// when its position fell out of range) is shown as committed, named by
// the policy it stands for, with no lag; a commit past the log end keeps
// its negative lag.
func TestResetSentinelHasNoLag(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.produce(t, "orders", 0, 10)
	f.produce(t, "orders", 1, 4)
	require.NoError(t, f.coord.CommitDirect("reset", []offsets.Entry{
		{Topic: "orders", Partition: 0, Offset: offsets.ResetEarliest, LeaderEpoch: offsets.NoLeaderEpoch},
		{Topic: "orders", Partition: 1, Offset: offsets.ResetLatest, LeaderEpoch: offsets.NoLeaderEpoch},
		{Topic: "orders", Partition: 2, Offset: 3, LeaderEpoch: offsets.NoLeaderEpoch},
	}))
	requireJSON(t, `[
		{"topic": "orders", "partition": 0, "log_start_offset": 0, "log_end_offset": 10, "owner": "",
		 "fetch_positions": [], "committed": -2, "lag": null, "committed_reset": "earliest"},
		{"topic": "orders", "partition": 1, "log_start_offset": 0, "log_end_offset": 4, "owner": "",
		 "fetch_positions": [], "committed": -1, "lag": null, "committed_reset": "latest"},
		{"topic": "orders", "partition": 2, "log_start_offset": 0, "log_end_offset": 0, "owner": "",
		 "fetch_positions": [], "committed": 3, "lag": -3},
		{"topic": "orders", "partition": 3, "log_start_offset": 0, "log_end_offset": 0, "owner": "",
		 "fetch_positions": [], "committed": null, "lag": null}
	]`, f.partitionsOf(t, "reset"))
}

// TestFetchPositionsForgottenWhenTheConnectionCloses: ConnClosed drops
// every position of that connection, and only those.
func TestFetchPositionsForgottenWhenTheConnectionCloses(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.fetch("127.0.0.1:50001", "c", "orders", 0, 1)
	f.fetch("127.0.0.1:50001", "c", "orders", 1, 2)
	f.fetch("127.0.0.1:50002", "c", "orders", 0, 3)
	f.rec.ConnOpened("127.0.0.1:50001")
	f.rec.ConnClosed("127.0.0.1:50001")
	require.Equal(t, []string{"127.0.0.1:50002 c orders-0 @3"}, positions(f.rec))
	f.rec.ConnClosed("127.0.0.1:50009") // never fetched: nothing to forget
	require.Equal(t, []string{"127.0.0.1:50002 c orders-0 @3"}, positions(f.rec))
	f.rec.ConnClosed("127.0.0.1:50002")
	require.Empty(t, positions(f.rec))
	require.Empty(t, f.rec.fetches.byRemote, "the index is empty too")
}

// TestFetchPositionsBounded: the table holds at most MaxFetchPositions,
// dropping the least recently updated; a connection whose every position
// was dropped leaves the index.
func TestFetchPositionsBounded(t *testing.T) {
	t.Parallel()
	f := newFixtureWith(t, fixtureOptions{maxPositions: 3})
	f.fetch("127.0.0.1:50001", "c", "orders", 0, 1)
	f.fetch("127.0.0.1:50002", "c", "orders", 0, 2)
	f.fetch("127.0.0.1:50003", "c", "orders", 0, 3)
	f.fetch("127.0.0.1:50001", "c", "orders", 0, 4) // an update: 50002's is now the oldest
	f.fetch("127.0.0.1:50004", "c", "orders", 0, 5)
	f.fetch("127.0.0.1:50005", "c", "orders", 0, 6)
	require.Equal(t, []string{
		"127.0.0.1:50005 c orders-0 @6",
		"127.0.0.1:50004 c orders-0 @5",
		"127.0.0.1:50001 c orders-0 @4",
	}, positions(f.rec))
	require.Len(t, f.rec.fetches.byRemote, 3)
	require.Contains(t, f.rec.fetches.byRemote, "127.0.0.1:50001")
	require.NotContains(t, f.rec.fetches.byRemote, "127.0.0.1:50002")

	_, err := NewRecorder(RecorderConfig{MaxFetchPositions: -1})
	require.ErrorContains(t, err, "MaxFetchPositions must not be negative")
	rec, err := NewRecorder(RecorderConfig{})
	require.NoError(t, err)
	require.Equal(t, 10_000, rec.fetches.positions.max)
}

// positions lists the recorder's fetch positions, the most recent first.
func positions(r *Recorder) []string {
	r.posMu.Lock()
	defer r.posMu.Unlock()
	var out []string
	r.fetches.positions.each(func(k fetchKey, p fetchPosition) {
		out = append(out, fmt.Sprintf("%s %s %s-%d @%d", k.remote, k.clientID, k.topic, k.partition, p.offset))
	})
	return out
}

func TestLRU(t *testing.T) {
	t.Parallel()
	l := newLRU[string, int](2)
	var forgot []string
	l.forgot = func(k string) { forgot = append(forgot, k) }
	require.True(t, l.set("a", 1))
	require.True(t, l.set("b", 2))
	require.False(t, l.set("a", 3), "an update")
	require.True(t, l.set("c", 4), "b, the least recently set, goes")
	require.Equal(t, []string{"b"}, forgot)
	v, ok := l.get("a")
	require.True(t, ok)
	require.Equal(t, 3, v)
	_, ok = l.get("b")
	require.False(t, ok)
	l.delete("a")
	l.delete("nobody")
	require.Equal(t, 1, l.len())
	require.Equal(t, []string{"b"}, forgot, "delete does not call forgot")

	none := newLRU[string, int](0)
	require.False(t, none.set("a", 1))
	require.Zero(t, none.len())
}

// TestLogAndLagMetrics: the log end of the first MaxPartitionSeries
// partitions, the number of partitions, and the lag of each group with
// series of its own, read at the scrape; a deleted group's lag goes.
func TestLogAndLagMetrics(t *testing.T) {
	t.Parallel()
	f := newFixtureWith(t, fixtureOptions{maxPartitions: 2, maxGroupSeries: 1})
	f.produce(t, "orders", 0, 10)
	f.produce(t, "orders", 1, 2)
	f.produce(t, "payments", 0, 1)
	res := f.join(t, "app", "a", time.Minute, "orders")
	f.join(t, "beyond", "b", time.Minute, "orders") // past the cap of one group
	require.NoError(t, f.coord.Commit("app", "a", res.Generation, []offsets.Entry{
		{Topic: "orders", Partition: 0, Offset: 6, LeaderEpoch: offsets.NoLeaderEpoch},
		{Topic: "orders", Partition: 1, Offset: 1, LeaderEpoch: offsets.NoLeaderEpoch},
	}))
	require.NoError(t, f.coord.CommitDirect("beyond", []offsets.Entry{{Topic: "orders", Partition: 0, Offset: 0}}))
	require.NoError(t, f.coord.CommitDirect("app", []offsets.Entry{{Topic: "payments", Partition: 0, Offset: offsets.ResetEarliest}}))

	fams := scrape(t, f.srv.Handler())
	require.Equal(t, 5.0, value(fams, "minibroker_partitions"))
	require.Equal(t, 10.0, value(fams, "minibroker_partition_log_end_offset", "partition", "0", "topic", "orders"))
	require.Equal(t, 2.0, value(fams, "minibroker_partition_log_end_offset", "partition", "1", "topic", "orders"))
	require.Len(t, fams["minibroker_partition_log_end_offset"].GetMetric(), 2, "the cap")
	require.Equal(t, 5.0, value(fams, "minibroker_group_lag", "group", "app"), "(10-6) + (2-1), and nothing for the reset sentinel on payments-0")
	require.Equal(t, -1.0, value(fams, "minibroker_group_lag", "group", "beyond"))

	f.coord.Leave("app", "a")
	require.NoError(t, f.coord.DeleteGroups("app")[0])
	fams = scrape(t, f.srv.Handler())
	require.Equal(t, -1.0, value(fams, "minibroker_group_lag", "group", "app"))
}
