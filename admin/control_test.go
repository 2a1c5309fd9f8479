package admin

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/minibroker/minibroker/internal/testutil"
	"github.com/minibroker/minibroker/offsets"
)

func TestAdvance(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, body string
		code       int
		want       string
	}{
		{"forward", `{"ms":100}`, http.StatusOK, `{"now":"1970-01-01T00:00:00.1Z","now_ms":100}`},
		{"zero", `{"ms":0}`, http.StatusOK, `{"now":"1970-01-01T00:00:00Z","now_ms":0}`},
		{"whitespace", " {\"ms\" : 1}\n", http.StatusOK, `{"now":"1970-01-01T00:00:00.001Z","now_ms":1}`},
		{"negative", `{"ms":-1}`, http.StatusBadRequest, `{"error":"ms must not be negative, got -1: the clock only moves forward"}`},
		{"missing", `{}`, http.StatusBadRequest, `{"error":"want {\"ms\":N}: ms is missing"}`},
		{"null", `{"ms":null}`, http.StatusBadRequest, `{"error":"want {\"ms\":N}: ms is missing"}`},
		{"empty body", ``, http.StatusBadRequest, `{"error":"want {\"ms\":N}: the body is empty"}`},
		{"string", `{"ms":"5"}`, http.StatusBadRequest, ``},
		{"fraction", `{"ms":1.5}`, http.StatusBadRequest, ``},
		{"unknown field", `{"ms":1,"seconds":2}`, http.StatusBadRequest, ``},
		{"two objects", `{"ms":1}{"ms":2}`, http.StatusBadRequest, `{"error":"want {\"ms\":N}: unexpected data after the object"}`},
		{"not an object", `[100]`, http.StatusBadRequest, ``},
		{"overflow", `{"ms":9223372036855}`, http.StatusBadRequest, `{"error":"ms must be at most 9223372036854, got 9223372036855"}`},
		{"too large a body", `{"ms":1` + strings.Repeat(" ", maxBodyBytes) + `}`, http.StatusBadRequest, ``},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			code, body := f.do(t, "POST", "/v1/clock/advance", tc.body)
			require.Equal(t, tc.code, code, body)
			if tc.want != "" {
				requireJSON(t, tc.want, body)
			} else {
				require.Contains(t, body, `{"error":"want {\"ms\":N}: `)
			}
			if code != http.StatusOK {
				require.Equal(t, int64(0), f.clock.Now().UnixMilli(), "a rejected advance moved the clock")
			}
		})
	}
}

func TestAdvanceAccumulatesAndLogs(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	for range 3 {
		code, _ := f.do(t, "POST", "/v1/clock/advance", `{"ms":250}`)
		require.Equal(t, http.StatusOK, code)
	}
	require.Equal(t, int64(750), f.clock.Now().UnixMilli())
	logs := f.logs.Find("clock advanced")
	require.Len(t, logs, 3)
	require.Equal(t, testutil.Record{Level: slog.LevelInfo, Message: "clock advanced", Attrs: map[string]string{"by": "250ms", "now_ms": "750"}}, logs[2])
}

func TestAdvanceWithRealClock(t *testing.T) {
	t.Parallel()
	f := newFixtureWith(t, fixtureOptions{realClock: true})
	for _, body := range []string{`{"ms":100}`, `{"ms":-1}`, ``} {
		code, got := f.do(t, "POST", "/v1/clock/advance", body)
		require.Equal(t, http.StatusConflict, code)
		requireJSON(t, `{"error":"the clock is real: only a broker started with --clock manual can be advanced"}`, got)
	}
	code, body := f.do(t, "GET", "/v1/groups", "")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, `"clock":"real"`)
}

// TestExpireExercise3 is the chapter's exercise 3 over the admin API: two
// members with 100 ms sessions join at 0; at exactly 100 ms nobody
// expires (the deadline test is strict), at 101 ms both do, in one
// rebalance that leaves the group Empty.
func TestExpireExercise3(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.join(t, "ex3", "m1", 100*time.Millisecond, "orders")
	f.join(t, "ex3", "m2", 100*time.Millisecond, "orders")

	code, body := f.do(t, "POST", "/v1/clock/advance", `{"ms":100}`)
	require.Equal(t, http.StatusOK, code)
	requireJSON(t, `{"now":"1970-01-01T00:00:00.1Z","now_ms":100}`, body)
	code, body = f.do(t, "POST", "/v1/expire", "")
	require.Equal(t, http.StatusOK, code)
	requireJSON(t, `{"expired":[]}`, body)

	code, _ = f.do(t, "POST", "/v1/clock/advance", `{"ms":1}`)
	require.Equal(t, http.StatusOK, code)
	code, body = f.do(t, "POST", "/v1/expire", "")
	require.Equal(t, http.StatusOK, code)
	requireJSON(t, `{"expired":[{"group":"ex3","member":"m1"},{"group":"ex3","member":"m2"}]}`, body)

	code, body = f.do(t, "GET", "/v1/groups/ex3", "")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, `"state":"Empty","generation":3,`)
	require.Equal(t, []testutil.Record{
		{Level: slog.LevelInfo, Message: "member expired", Attrs: map[string]string{"group": "ex3", "member": "m1"}},
		{Level: slog.LevelInfo, Message: "member expired", Attrs: map[string]string{"group": "ex3", "member": "m2"}},
	}, f.logs.Find("member expired"))
}

// TestExpireMemberControl: the page's "expire" button ends one live
// member's session; the group rebalances without it.
func TestExpireMemberControl(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.join(t, "app", "a", time.Minute, "orders")
	f.join(t, "app", "b", time.Minute, "orders")
	code, body := f.do(t, "POST", "/v1/groups/app/members/a/expire", "{}")
	require.Equal(t, http.StatusOK, code, body)
	requireJSON(t, `{"group":"app","member":"a","generation":3}`, body)
	v, _ := f.coord.Describe("app")
	require.Len(t, v.Members, 1)
	require.Equal(t, "b", v.Members[0].MemberID)

	code, body = f.do(t, "POST", "/v1/groups/app/members/a/expire", "{}")
	require.Equal(t, http.StatusNotFound, code)
	requireJSON(t, `{"error":"member \"a\" is not in group \"app\""}`, body)
	code, _ = f.do(t, "POST", "/v1/groups/nope/members/b/expire", "{}")
	require.Equal(t, http.StatusNotFound, code)
	require.Equal(t, []testutil.Record{
		{Level: slog.LevelInfo, Message: "member expired", Attrs: map[string]string{"group": "app", "member": "a", "by": "request"}},
	}, f.logs.Find("member expired"), "one line, the coordinator's; a refused expiry logs none")
}

// TestRebalanceControl: a forced rebalance keeps the members and moves
// the generation.
func TestRebalanceControl(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.join(t, "app", "a", time.Minute, "orders")
	code, body := f.do(t, "POST", "/v1/groups/app/rebalance", "{}")
	require.Equal(t, http.StatusOK, code, body)
	requireJSON(t, `{"group":"app","generation":2}`, body)
	code, body = f.do(t, "POST", "/v1/groups/nope/rebalance", "{}")
	require.Equal(t, http.StatusNotFound, code)
	requireJSON(t, `{"error":"group \"nope\" not found"}`, body)
}

// TestDeleteGroupControl: DELETE /v1/groups/{group} is Kafka's
// DeleteGroups for one group: an Empty group and its offsets go (200), a
// group with members stays (409), an unknown one is 404, an id no group
// can have 400.
func TestDeleteGroupControl(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	res := f.join(t, "left", "a", time.Minute, "orders")
	require.NoError(t, f.coord.Commit("left", "a", res.Generation, []offsets.Entry{{Topic: "orders", Partition: 0, Offset: 7}}))
	f.coord.Leave("left", "a")
	f.join(t, "busy", "b", time.Minute, "orders")
	require.NoError(t, f.coord.CommitDirect("a/b c", []offsets.Entry{{Topic: "orders", Partition: 1, Offset: 2}}))

	code, body := f.do(t, "DELETE", "/v1/groups/left", "")
	require.Equal(t, http.StatusOK, code, body)
	requireJSON(t, `{"group":"left","deleted":true}`, body)
	code, _ = f.do(t, "GET", "/v1/groups/left", "")
	require.Equal(t, http.StatusNotFound, code)
	require.Empty(t, f.coord.Committed("left"))

	code, body = f.do(t, "DELETE", "/v1/groups/busy", "")
	require.Equal(t, http.StatusConflict, code)
	requireJSON(t, `{"error":"group \"busy\" has members: only an Empty group can be deleted; its members must leave or expire first"}`, body)
	_, ok := f.coord.Describe("busy")
	require.True(t, ok)

	code, body = f.do(t, "DELETE", "/v1/groups/left", "")
	require.Equal(t, http.StatusNotFound, code)
	requireJSON(t, `{"error":"group \"left\" not found"}`, body)

	code, body = f.do(t, "DELETE", "/v1/groups/"+url.PathEscape("a/b c"), "")
	require.Equal(t, http.StatusOK, code, "an escaped id: %s", body)
	requireJSON(t, `{"group":"a/b c","deleted":true}`, body)

	code, body = f.do(t, "DELETE", "/v1/groups/"+strings.Repeat("g", 256), "")
	require.Equal(t, http.StatusBadRequest, code)
	require.Contains(t, body, "cannot be a group id: invalid group id: 256 bytes, limit 255")

	require.Equal(t, []testutil.Record{
		{Level: slog.LevelInfo, Message: "group deleted on request", Attrs: map[string]string{"group": "left"}},
		{Level: slog.LevelInfo, Message: "group deleted on request", Attrs: map[string]string{"group": "a/b c"}},
	}, f.logs.Find("group deleted on request"))
}

// TestDeleteGroupControlGuard: a DELETE changes the broker, so the guard
// wants it as JSON (415 otherwise), from a loopback Host, and with the
// token when there is one, as the page sends it.
func TestDeleteGroupControlGuard(t *testing.T) {
	t.Parallel()
	f := newFixtureWith(t, fixtureOptions{token: "s3cret"})
	require.NoError(t, f.coord.CommitDirect("manual", []offsets.Entry{{Topic: "orders", Partition: 0, Offset: 1}}))
	send := func(contentType, host, auth string) (int, string) {
		r := httptest.NewRequest("DELETE", "/v1/groups/manual", nil)
		r.Host = host
		if contentType != "" {
			r.Header.Set("Content-Type", contentType)
		}
		if auth != "" {
			r.Header.Set("Authorization", auth)
		}
		rec := httptest.NewRecorder()
		f.srv.Handler().ServeHTTP(rec, r)
		return rec.Code, rec.Body.String()
	}
	const host = "127.0.0.1:19644" // a loopback Host header; nothing listens there
	code, body := send("", host, "Bearer s3cret")
	require.Equal(t, http.StatusUnsupportedMediaType, code)
	requireJSON(t, `{"error":"state-changing requests must be sent with Content-Type: application/json"}`, body)
	code, _ = send("text/plain", host, "Bearer s3cret")
	require.Equal(t, http.StatusUnsupportedMediaType, code)
	code, _ = send("application/json", host, "")
	require.Equal(t, http.StatusUnauthorized, code)
	require.Len(t, f.coord.Committed("manual"), 1, "nothing was deleted")
	code, body = send("application/json", host, "Bearer s3cret")
	require.Equal(t, http.StatusOK, code, body)
	require.Empty(t, f.coord.Committed("manual"))

	g := newFixture(t)
	require.NoError(t, g.coord.CommitDirect("manual", []offsets.Entry{{Topic: "orders", Partition: 0, Offset: 1}}))
	r := newRequest("DELETE", "/v1/groups/manual", "")
	r.Host = "evil.example:9644"
	rec := httptest.NewRecorder()
	g.srv.Handler().ServeHTTP(rec, r)
	require.Equal(t, http.StatusForbidden, rec.Code)
	require.Len(t, g.coord.Committed("manual"), 1)
}
