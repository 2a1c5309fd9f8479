package integration

// The live page as a user sees it, at two window widths, in a real
// browser: the busy scene (admin_browser_scene_test.go) of several
// groups with long ids, a transaction, a fault whose member left and two
// folded idle groups. A script the test adds to the page measures the
// laid-out page once it shows the scene, and the test checks what it
// found: nothing makes the page scroll sideways, every column of every
// table is in view, no text is cut without a tooltip, the folded groups
// show their total lag, the fault is flagged, and each group its total
// lag and its consumption rate. The screenshot at 1280 px is the README's
// docs/admin.png, replaced when MINIBROKER_UPDATE_SCREENSHOT=1.

import (
	"bytes"
	"encoding/json"
	"html"
	"image/png"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// adminLayoutScript waits, polling, until the page shows the whole busy
// scene with a consumption rate (so after the held poll), then measures
// the page and puts what it found, as JSON, in a hidden
// <pre id="layout-report">. A header cell is in view when its box lies
// within the window's width and within every box around it that clips
// (a table's scroll box), and, scrolled to, nothing covers its left
// edge, middle or right edge; text is cut when an element that clips is
// narrower than its content, and it has a tooltip when it or a box
// around it has a title.
const adminLayoutScript = `
const label = e => e.tagName.toLowerCase() + (e.className ? "." + String(e.className).split(" ").join(".") : "") +
  " " + JSON.stringify((e.textContent || "").trim().slice(0, 40)) + " in " +
  ((e.closest("[data-group],[data-fault],[data-txn],[data-topic-partition],section") || {}).outerHTML || "").slice(0, 60);
const measure = () => {
  const ready = document.querySelector('[data-group="orders-enricher"] .rate:not([data-rate=""])') &&
    document.querySelector("tr[data-txn]") && document.querySelector("[data-member-gone]") &&
    document.querySelector("[data-idle-group]") && document.querySelector("tr[data-topic]") && document.querySelector("tr[data-remote]");
  if (!ready) return false;
  const de = document.documentElement;
  const out = { window: window.innerWidth, scroll_width: de.scrollWidth, client_width: de.clientWidth,
    tables: document.querySelectorAll("table").length, heads: 0, hidden: [], cut: [], scrolling: [], idle: [], gone: [] };
  const inView = e => {
    let r = e.getBoundingClientRect();
    if (r.width <= 0 || r.left < -0.5 || r.right > de.clientWidth + 0.5) return false;
    for (let a = e.parentElement; a; a = a.parentElement) {
      if (getComputedStyle(a).overflowX === "visible") continue;
      const ar = a.getBoundingClientRect();
      if (r.left < ar.left - 0.5 || r.right > ar.right + 0.5) return false;
    }
    e.scrollIntoView({ block: "center", inline: "nearest" });
    r = e.getBoundingClientRect();
    const y = r.top + r.height / 2;
    return [r.left + 1, r.left + r.width / 2, r.right - 1].every(x => e.contains(document.elementFromPoint(x, y)));
  };
  for (const th of document.querySelectorAll("th")) {
    out.heads++;
    if (!inView(th)) out.hidden.push(label(th));
  }
  for (const e of document.querySelectorAll("body *")) {
    if (getComputedStyle(e).overflowX === "visible" || e.scrollWidth <= e.clientWidth + 1) continue;
    if (e.classList.contains("scroll")) out.scrolling.push(label(e));
    else if (!e.closest("[title]")) out.cut.push(label(e));
  }
  const details = document.querySelector("details.idle");
  for (const g of document.querySelectorAll("[data-idle-group]")) {
    out.idle.push({ group: g.dataset.idleGroup, total_lag: g.dataset.totalLag, text: g.textContent, in_view: inView(g), folded: !details.open });
  }
  for (const m of document.querySelectorAll("[data-member-gone]")) {
    out.gone.push({ fault: m.closest("[data-fault]").dataset.fault, reason: m.dataset.memberGone, text: m.textContent, title: m.title, in_view: inView(m) });
  }
  window.scrollTo(0, 0);
  const pre = document.createElement("pre");
  pre.id = "layout-report";
  pre.hidden = true;
  pre.textContent = JSON.stringify(out);
  document.body.append(pre);
  return true;
};
const measuring = setInterval(() => { if (measure()) clearInterval(measuring); }, 50);`

// adminLayoutReport is what adminLayoutScript found.
type adminLayoutReport struct {
	Window      int `json:"window"`
	ScrollWidth int `json:"scroll_width"`
	ClientWidth int `json:"client_width"`
	Tables      int `json:"tables"`
	Heads       int `json:"heads"`
	// Hidden are the header cells out of view, Cut the elements that cut
	// their text with no tooltip, Scrolling the tables that scroll in
	// their box.
	Hidden    []string `json:"hidden"`
	Cut       []string `json:"cut"`
	Scrolling []string `json:"scrolling"`
	Idle      []struct {
		Group    string `json:"group"`
		TotalLag string `json:"total_lag"`
		Text     string `json:"text"`
		InView   bool   `json:"in_view"`
		Folded   bool   `json:"folded"`
	} `json:"idle"`
	Gone []struct {
		Fault  string `json:"fault"`
		Reason string `json:"reason"`
		Text   string `json:"text"`
		Title  string `json:"title"`
		InView bool   `json:"in_view"`
	} `json:"gone"`
}

// TestAdminBrowserLayout: the busy scene at 1280 and 1920 px. The page
// polls once; its second poll of /v1/groups is held while orders-enricher
// consumes 40 records (produced, then committed by the owner) and the
// broker's clock moves 2 s, so the page measures 20 records a second.
// At each width: the page does not scroll sideways, every header cell of
// every table is in view and no table scrolls in its box, no text is
// cut without a tooltip; each group shows its total lag (orders-enricher
// 102, payments-audit 3), orders-enricher its rate; the folded line shows
// nightly-reconcile with lag 23 and old-lab-1 with lag 0, in view while
// folded; fault 1 is flagged: its member left at generation 4.
func TestAdminBrowserLayout(t *testing.T) {
	if testing.Short() {
		t.Skip("runs chromium")
	}
	t.Parallel()
	b := startBroker(t, adminBusyConfig)
	scene := adminBusyScene(t, b)
	require.Equal(t, "1", scene.faultID)

	for _, width := range []int{1280, 1920} {
		t.Run(strconv.Itoa(width), func(t *testing.T) {
			held := make(chan struct{})     // closed at the page's second poll of /v1/groups
			released := make(chan struct{}) // closed once the group has consumed and the clock moved
			var polls atomic.Int32
			front := adminProxy(t, b, adminLayoutScript, func(next http.Handler) http.Handler {
				return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					if r.Method == "GET" && r.URL.Path == "/v1/groups" {
						if polls.Add(1) == 2 {
							close(held)
							select {
							case <-released:
							case <-time.After(adminChromiumTimeout):
							}
						}
					}
					next.ServeHTTP(w, r)
				})
			})
			shot := filepath.Join(t.TempDir(), "admin.png")
			dom := make(chan string, 1)
			go func() {
				defer close(dom)
				dom <- adminChromium(t, "--virtual-time-budget=3000", "--window-size="+strconv.Itoa(width)+",1000",
					"--screenshot="+shot, "--dump-dom", front)
			}()
			select {
			case <-held:
			case page, ok := <-dom:
				t.Fatalf("the page did not poll twice (chromium ok=%v):\n%s", ok, adminTail(page, 4000))
			case <-time.After(adminChromiumTimeout):
				t.Fatal("the page did not poll twice")
			}
			scene.consume(t, "orders", 2, 40)
			_, err := b.Advance(2 * time.Second)
			require.NoError(t, err)
			close(released)
			page, ok := <-dom
			require.True(t, ok, "chromium failed")

			m := regexp.MustCompile(`<pre id="layout-report" hidden="">([^<]*)</pre>`).FindStringSubmatch(page)
			require.NotNil(t, m, "the page never showed the whole scene:\n%s", adminTail(page, 12000))
			var got adminLayoutReport
			require.NoError(t, json.Unmarshal([]byte(html.UnescapeString(m[1])), &got))

			require.Equal(t, width, got.Window)
			require.Equal(t, width, got.ClientWidth)
			require.LessOrEqual(t, got.ScrollWidth, got.ClientWidth, "the page scrolls sideways")
			require.Equal(t, 9, got.Tables, "members and partitions of two groups; fencing, faults, transactions, topics, connections")
			require.Empty(t, got.Hidden, "header cells out of view (of %d)", got.Heads)
			require.Empty(t, got.Scrolling, "tables wider than their box")
			require.Empty(t, got.Cut, "text cut without a tooltip")

			require.Len(t, got.Idle, 2)
			for i, want := range []struct{ group, lag, text string }{
				{busyIdle, "23", busyIdle + "lag 23"}, {busyIdleZero, "0", busyIdleZero + "lag 0"},
			} {
				require.Equal(t, want.group, got.Idle[i].Group, "the most lagging first")
				require.Equal(t, want.lag, got.Idle[i].TotalLag)
				require.Equal(t, want.text, got.Idle[i].Text)
				require.True(t, got.Idle[i].Folded && got.Idle[i].InView, "shown on the folded line: %+v", got.Idle[i])
			}

			require.Len(t, got.Gone, 1)
			gone := got.Gone[0]
			require.Equal(t, "1", gone.Fault)
			require.Equal(t, "leave", gone.Reason)
			require.Equal(t, "\u26a0 member left", gone.Text)
			require.Equal(t, "member "+scene.gone+" left: group orders-enricher went on without it at generation 4, t=361500 ms (leave). "+
				"This fault matches nothing unless a member with that id comes back.", gone.Title)
			require.True(t, gone.InView)

			for _, want := range []string{
				`<span class="total-lag behind" data-total-lag="102" title="the sum of the partitions' lags (log end - committed) over those with a commit">lag 102</span>`,
				`<span class="rate" data-rate="20.0" title="40 records committed in the last 2000 ms of the broker's clock; total lag 102 → 102">consumed 20.0/s</span>`,
				`<span class="total-lag behind" data-total-lag="3" title="the sum of the partitions' lags (log end - committed) over those with a commit">lag 3</span>`,
				`<td class="num" data-total-lag="102">102</td>`,
				`<tr data-fault="1" class="gone">`,
				`<tr class="txn" data-txn="` + busyTxnID + `" data-state="Ongoing">`,
			} {
				require.Contains(t, page, want)
			}

			data, err := os.ReadFile(shot)
			require.NoError(t, err)
			cfg, err := png.DecodeConfig(bytes.NewReader(data))
			require.NoError(t, err, "not a PNG")
			require.Equal(t, [2]int{width, 1000}, [2]int{cfg.Width, cfg.Height})
			if width == 1280 && os.Getenv("MINIBROKER_UPDATE_SCREENSHOT") == "1" {
				dst := filepath.Join("..", "docs", "admin.png")
				require.NoError(t, os.WriteFile(dst, data, 0o644))
				t.Logf("updated %s", dst)
			}
		})
	}
}
