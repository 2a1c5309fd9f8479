package admin

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// doubleOwnershipOf returns the "double_ownership" field of GET
// /v1/groups/{group}, and checks that GET /v1/groups says the same.
func (f *fixture) doubleOwnershipOf(t *testing.T, group string) string {
	t.Helper()
	code, body := f.do(t, "GET", "/v1/groups/"+group, "")
	require.Equal(t, http.StatusOK, code, body)
	var g struct {
		DoubleOwnership json.RawMessage `json:"double_ownership"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &g))
	code, body = f.do(t, "GET", "/v1/groups", "")
	require.Equal(t, http.StatusOK, code, body)
	var all struct {
		Groups []struct {
			Group           string          `json:"group"`
			DoubleOwnership json.RawMessage `json:"double_ownership"`
		} `json:"groups"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &all))
	for _, o := range all.Groups {
		if o.Group == group {
			require.JSONEq(t, string(g.DoubleOwnership), string(o.DoubleOwnership))
		}
	}
	return string(g.DoubleOwnership) + "\n"
}

// TestGroupDoubleOwnership: a joins and fetches all of orders; b joins
// and is given orders-1 and -3 at once, while a, not yet told, fetches
// all four. Both fetch 1 and 3: two partitions doubly owned, by member.
// Once a has been told of the new generation, none.
func TestGroupDoubleOwnership(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.joinFrom(t, "app", "a", "client-a", "/127.0.0.1", "orders")
	requireJSON(t, `{"partitions": null, "by": "",
		"reason": "no connection with a member's client id fetched the group's partitions in the last 10s", "window_ms": 10000, "doubly_owned": []}`, f.doubleOwnershipOf(t, "app"))
	for p := range int32(4) {
		f.fetch("127.0.0.1:50001", "client-a", "orders", p, 0)
	}
	requireJSON(t, `{"partitions": 0, "by": "member", "window_ms": 10000, "doubly_owned": []}`, f.doubleOwnershipOf(t, "app"))

	f.joinFrom(t, "app", "b", "client-b", "/127.0.0.1", "orders")
	f.fetch("127.0.0.1:50002", "client-b", "orders", 1, 0)
	f.fetch("127.0.0.1:50002", "client-b", "orders", 3, 0)
	for p := range int32(4) { // a has not been told yet
		f.fetch("127.0.0.1:50001", "client-a", "orders", p, 2)
	}
	requireJSON(t, `{"partitions": 2, "by": "member", "window_ms": 10000, "doubly_owned": [
		{"topic": "orders", "partition": 1, "fetchers": ["a", "b"]},
		{"topic": "orders", "partition": 3, "fetchers": ["a", "b"]}]}`, f.doubleOwnershipOf(t, "app"))

	// a re-joins (its refresh; a join is a new generation here, 3, with
	// the same split) and is told of it: it knows 1 and 3 are b's, so its
	// fetches of them, recent as they are, no longer count. b, told of
	// generation 2 only, still counts for 1 and 3, alone.
	res := f.joinFrom(t, "app", "a", "client-a", "/127.0.0.1", "orders")
	require.Equal(t, int32(3), res.Generation)
	requireJSON(t, `{"partitions": 0, "by": "member", "window_ms": 10000, "doubly_owned": []}`, f.doubleOwnershipOf(t, "app"))
}

// TestGroupDoubleOwnershipByConnection: two members with one client id on
// one host (kgo's default client id) cannot be told apart; the count is
// by connection, with the reason.
func TestGroupDoubleOwnershipByConnection(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.joinFrom(t, "app", "a", "kgo", "/127.0.0.1", "payments")
	f.joinFrom(t, "app", "b", "kgo", "/127.0.0.1", "payments")
	f.fetch("127.0.0.1:50001", "kgo", "payments", 0, 0)
	f.fetch("127.0.0.1:50002", "kgo", "payments", 0, 0)
	f.fetch("127.0.0.1:50003", "other", "payments", 0, 0) // not the group's
	requireJSON(t, `{"partitions": 1, "by": "connection",
		"reason": "counted by connection: 2 members share client id kgo on /127.0.0.1", "window_ms": 10000,
		"doubly_owned": [{"topic": "payments", "partition": 0,
			"fetchers": ["connection 127.0.0.1:50001 (client id kgo)", "connection 127.0.0.1:50002 (client id kgo)"]}]}`,
		f.doubleOwnershipOf(t, "app"))

	// A position as old as the window still counts; older, it does not.
	_, err := f.clock.Advance(doubleOwnershipWindow)
	require.NoError(t, err)
	f.fetch("127.0.0.1:50001", "kgo", "payments", 0, 1)
	require.Contains(t, f.doubleOwnershipOf(t, "app"), `"partitions":1,`)
	_, err = f.clock.Advance(time.Millisecond)
	require.NoError(t, err)
	requireJSON(t, `{"partitions": 0, "by": "connection",
		"reason": "counted by connection: 2 members share client id kgo on /127.0.0.1", "window_ms": 10000, "doubly_owned": []}`,
		f.doubleOwnershipOf(t, "app"))

	// A connection's positions go when it closes: one fetcher is left.
	f.fetch("127.0.0.1:50002", "kgo", "payments", 0, 1)
	require.Contains(t, f.doubleOwnershipOf(t, "app"), `"partitions":1,`)
	f.rec.forgetConn("127.0.0.1:50002")
	requireJSON(t, `{"partitions": 0, "by": "connection",
		"reason": "counted by connection: 2 members share client id kgo on /127.0.0.1", "window_ms": 10000, "doubly_owned": []}`,
		f.doubleOwnershipOf(t, "app"))
}

// TestGroupDoubleOwnershipEmptyGroup: a group whose members hold nothing
// has nothing doubly owned, and says so without a reason.
func TestGroupDoubleOwnershipEmptyGroup(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.joinFrom(t, "app", "a", "client-a", "/127.0.0.1", "orders")
	f.coord.Leave("app", "a")
	requireJSON(t, `{"partitions": 0, "by": "member", "window_ms": 10000, "doubly_owned": []}`, f.doubleOwnershipOf(t, "app"))
}
