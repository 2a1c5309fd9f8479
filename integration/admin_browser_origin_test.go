package integration

// A web page from another origin tries every state-changing endpoint of
// the admin API from a real browser, as any page the user happens to open
// could: no-cors fetches, a fetch that needs a preflight, and a form post.
// The guard (admin/guard.go) lets none through.

import (
	"fmt"
	"html"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/minibroker/minibroker/internal/testutil"
	"github.com/minibroker/minibroker/testkit/wiretest"
)

// adminAttackPage is the other origin's page; %[1]s is the admin API's
// base URL, %[2]s a member's expire path. Each fetch's outcome is written
// into the page; then the form posts into a hidden frame.
const adminAttackPage = `<!doctype html>
<html><body>
<ol id="outcomes"></ol>
<iframe name="sink" hidden></iframe>
<form id="form" method="POST" action="%[1]s%[2]s" target="sink"><input name="ms" value="600000"></form>
<script>
const base = %[1]q;
const attempts = {
  "advance, no-cors text": fetch(base + "/v1/clock/advance", { method: "POST", mode: "no-cors", headers: { "Content-Type": "text/plain" }, body: '{"ms":600000}' }),
  "expire, no-cors": fetch(base + "/v1/expire", { method: "POST", mode: "no-cors", body: "{}" }),
  "advance, json": fetch(base + "/v1/clock/advance", { method: "POST", headers: { "Content-Type": "application/json" }, body: '{"ms":600000}' }),
  "delete": fetch(base + "/v1/groups/live", { method: "DELETE" }),
};
Promise.allSettled(Object.values(attempts)).then(results => {
  Object.keys(attempts).forEach((name, i) => {
    const r = results[i];
    const li = document.createElement("li");
    li.id = name;
    li.textContent = name + ": " + (r.status === "fulfilled" ? "answered, status " + r.value.status + " " + r.value.type : "failed, " + r.reason.name);
    document.getElementById("outcomes").append(li);
  });
  document.getElementById("form").submit();
});
</script>
</body></html>
`

// TestAdminBrowserOtherOriginChangesNothing: a page served from another
// loopback port tries to advance the clock and run the expiry step with
// no-cors POSTs (text/plain, which needs no preflight), to advance the
// clock with a JSON POST and to delete the group (both need a preflight,
// which the API never grants), and to expire a member with an HTML form.
// Afterwards the clock, the group and its member are as they were, the
// two no-cors POSTs and the form got 415 from the guard (logged, with the
// page's origin), and neither request that needed a preflight was sent.
func TestAdminBrowserOtherOriginChangesNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("runs chromium")
	}
	t.Parallel()
	b := startBroker(t, adminConfig)
	c := wiretest.Dial(t, b.Addr(), "alpha")
	a := adminJoin(t, c, "live", "", 30*time.Second, "orders")
	_, err := b.Advance(500 * time.Millisecond)
	require.NoError(t, err)
	expirePath := "/v1/groups/live/members/" + a.MemberID + "/expire"

	page := fmt.Sprintf(adminAttackPage, b.adminURL(), html.EscapeString(expirePath))
	attacker := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, page)
	}))
	t.Cleanup(attacker.Close)
	require.NotEqual(t, b.adminURL(), attacker.URL)

	dom := adminChromium(t, "--virtual-time-budget=3000", "--dump-dom", attacker.URL+"/")
	for _, want := range []string{
		`<li id="advance, no-cors text">advance, no-cors text: answered, status 0 opaque</li>`,
		`<li id="expire, no-cors">expire, no-cors: answered, status 0 opaque</li>`,
		`<li id="advance, json">advance, json: failed, TypeError</li>`,
		`<li id="delete">delete: failed, TypeError</li>`,
	} {
		require.Contains(t, dom, want, "the attacking page:\n%s", adminTail(dom, 4000))
	}

	var groups struct {
		NowMS  int64 `json:"now_ms"`
		Groups []struct {
			Group      string `json:"group"`
			State      string `json:"state"`
			Generation int32  `json:"generation"`
			Members    []struct {
				MemberID   string `json:"member_id"`
				DeadlineMS int64  `json:"deadline_ms"`
			} `json:"members"`
		} `json:"groups"`
	}
	adminGetJSON(t, b.adminURL()+"/v1/groups", &groups)
	require.Equal(t, int64(500), groups.NowMS, "the clock did not move")
	require.Len(t, groups.Groups, 1, "the group is still there")
	g := groups.Groups[0]
	require.Equal(t, "live", g.Group)
	require.Equal(t, "Stable", g.State)
	require.Equal(t, int32(1), g.Generation, "no rebalance")
	require.Len(t, g.Members, 1)
	require.Equal(t, a.MemberID, g.Members[0].MemberID)
	require.Equal(t, int64(30_000), g.Members[0].DeadlineMS, "its lease is untouched")

	refused := func(path string) testutil.Record {
		return testutil.Record{Level: slog.LevelInfo, Message: "admin request refused", Attrs: map[string]string{
			"status": "415", "method": "POST", "path": path, "host": b.AdminAddr(), "origin": attacker.URL}}
	}
	require.ElementsMatch(t, []testutil.Record{
		refused("/v1/clock/advance"), refused("/v1/expire"), refused(expirePath),
	}, b.Logs.Find("admin request refused"), "the no-cors posts and the form were refused; the rest never came")
}
