package integration

// The live page's faults, in a real browser: the form cuts one member's
// heartbeats, the list shows each fault with its hits, and the remove
// button removes it, all through the admin API's guard as the page's own
// controls send them.

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/minibroker/minibroker/broker"
	"github.com/minibroker/minibroker/testkit/wiretest"
)

// TestAdminBrowserFaults: fault 1, on alpha's heartbeats, has one hit
// when the page opens. A script the test adds to the page (the user's
// clicks) fills the form with beta's member id and submits it, then, once
// the list shows fault 1 with its hit, notes the hit count and clicks its
// remove button. Afterwards the broker holds only the page's fault, on
// beta's heartbeats, and the page lists it with its warning: beta has
// not joined, so the fault matches nothing yet.
func TestAdminBrowserFaults(t *testing.T) {
	if testing.Short() {
		t.Skip("runs chromium")
	}
	// Not parallel: it runs before the parallel tests start, so that one
	// more chromium does not crowd the others on two cores.
	b := startBroker(t, adminConfig)
	alpha := wiretest.Dial(t, b.Addr(), "alpha")
	a := adminJoin(t, alpha, "live", "", 30*time.Second, "orders")
	f, err := b.InjectFault(broker.Fault{Keys: []int16{12}, Group: "live", Member: a.MemberID, Err: 27, Count: -1})
	require.NoError(t, err)
	require.Equal(t, int16(27), heartbeat(t, alpha, "live", a.MemberID, a.Generation), "the fault answers REBALANCE_IN_PROGRESS")
	require.Equal(t, int64(1), f.Hits())

	front := adminPageWithScript(t, b, `
document.getElementById("cut-group").value = "live";
document.getElementById("cut-member").value = "beta-000002";
document.getElementById("cut").click();
const remover = setInterval(() => {
  const hits = document.querySelector('[data-hits="1"]');
  const remove = document.querySelector('[data-remove-fault="1"]');
  if (hits && remove && document.querySelector('[data-fault="2"]')) {
    clearInterval(remover);
    document.body.dataset.seenHits = hits.textContent;
    remove.click();
  }
}, 50);`)
	html := adminChromium(t, "--virtual-time-budget=4000", "--dump-dom", front)

	faults := b.Faults()
	require.Len(t, faults, 1, "fault 1 removed, the page's fault added; page:\n%s", adminTail(html, 6000))
	require.Equal(t, "2", faults[0].ID)
	require.Equal(t, broker.Fault{Keys: []int16{12}, Group: "live", Member: "beta-000002", Drop: true, Count: -1}, faults[0].Fault)
	require.Contains(t, html, `data-seen-hits="1"`, "the list showed fault 1's hit")
	require.Contains(t, html, "DELETE /v1/faults/1 \u2192 200")
	require.Contains(t, html, `data-fault="2"`)
	require.NotContains(t, html, `data-fault="1"`, "the next poll no longer lists it")
	require.Contains(t, html, "drop \u00b7 keys 12, group live, member beta-000002")
	// beta has not joined: the page says, under the fault, that it
	// matches nothing yet.
	warning := `group "live" has no member "beta-000002" now (its members: ` + a.MemberID + `)`
	require.Contains(t, html, `data-fault-warning="2"`)
	require.Contains(t, html, "\u26a0 "+warning)
	require.Equal(t, []string{warning}, faults[0].Warnings)
}
