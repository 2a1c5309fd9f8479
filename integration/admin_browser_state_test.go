package integration

// The chapter's four states on the live page, in a real browser: two
// groups whose members joined, were fenced and committed over the wire,
// whose consumers fetched on connections of their own, and partitions
// with records. The page shows each partition's log end, owner, fetch
// positions, commit and lag, says why each generation started and why
// each request was fenced, and offers its buttons. The page's layout and
// the README's picture are admin_browser_layout_test.go's.

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/testkit/wiretest"
)

// adminScene builds the scene of the page's picture on b (adminConfig):
//
//   - group "live": alpha-000001 (orders) and beta-000002 (orders,
//     payments) at generation 2; alpha was fenced twice with its stale
//     generation and once for a partition it does not own; alpha
//     committed orders-0 at 12 of 20 records (lag 8), beta orders-1 at
//     40 of 40 and payments-0 at 7 of 9; each fetches on a connection
//     of its own, with its client id, so its positions are its own.
//   - group "reports": two members with the client id gamma
//     (gamma-000003, gamma-000004), a forced rebalance, a heartbeat from
//     an unknown member; gamma's fetch position cannot be attributed.
//   - client delta asks for the metadata of "ordrs", a typo: a consumer
//     of it would wait for ever, and the page says so.
//
// The last activity is live's, so the page lists live first.
func adminScene(t *testing.T, b *testBroker) {
	t.Helper()
	alpha := wiretest.Dial(t, b.Addr(), "alpha")
	beta := wiretest.Dial(t, b.Addr(), "beta")
	a := adminJoin(t, alpha, "live", "", 30*time.Second, "orders")
	adminSync(t, alpha, "live", a)
	bm := adminJoin(t, beta, "live", "", 30*time.Second, "orders", "payments")
	adminSync(t, beta, "live", bm)
	require.Equal(t, []string{"alpha-000001", "beta-000002"}, []string{a.MemberID, bm.MemberID})
	producer := wiretest.Dial(t, b.Addr(), "producer")
	for _, p := range []struct {
		topic     string
		partition int32
		n         int
	}{{"orders", 0, 20}, {"orders", 1, 40}, {"orders", 2, 5}, {"payments", 0, 9}, {"payments", 1, 3}} {
		adminProduce(t, producer, p.topic, p.partition, p.n)
	}
	_, err := b.Advance(1250 * time.Millisecond)
	require.NoError(t, err)
	require.Equal(t, kerr.IllegalGeneration.Code, heartbeat(t, alpha, "live", a.MemberID, 1))
	require.Equal(t, kerr.IllegalGeneration.Code, adminCommit(t, alpha, "live", a.MemberID, 1, "orders", 0, 12))
	require.Equal(t, kerr.RebalanceInProgress.Code, adminCommit(t, alpha, "live", a.MemberID, 2, "orders", 1, 12))

	gamma := wiretest.Dial(t, b.Addr(), "gamma")
	adminJoin(t, gamma, "reports", "", 10*time.Second, "payments")
	adminJoin(t, gamma, "reports", "", 10*time.Second, "payments")
	require.NoError(t, b.ForceRebalance("reports")) // generation 3
	adminFetch(t, wiretest.Dial(t, b.Addr(), "gamma"), "payments", 0, 4)
	require.Equal(t, kerr.UnknownMemberID.Code, heartbeat(t, gamma, "reports", "gamma-000099", 3))
	meta := kmsg.NewPtrMetadataRequest()
	meta.Version, meta.Topics = 12, []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr("ordrs")}}
	require.Equal(t, kerr.UnknownTopicOrPartition.Code, wiretest.Do[*kmsg.MetadataResponse](t, wiretest.Dial(t, b.Addr(), "delta"), meta).Topics[0].ErrorCode)

	alphaFetch, betaFetch := wiretest.Dial(t, b.Addr(), "alpha"), wiretest.Dial(t, b.Addr(), "beta")
	adminFetch(t, alphaFetch, "orders", 0, 14)
	adminFetch(t, alphaFetch, "orders", 2, 5)
	adminFetch(t, betaFetch, "orders", 1, 40)
	adminFetch(t, betaFetch, "orders", 3, 0)
	adminFetch(t, betaFetch, "payments", 0, 9)
	adminFetch(t, betaFetch, "payments", 1, 3)
	_, err = b.Advance(400 * time.Millisecond)
	require.NoError(t, err)
	require.Zero(t, adminCommit(t, alpha, "live", a.MemberID, 2, "orders", 0, 12))
	require.Zero(t, adminCommit(t, beta, "live", bm.MemberID, 2, "orders", 1, 40))
	require.Zero(t, adminCommit(t, beta, "live", bm.MemberID, 2, "payments", 0, 7))
	require.Zero(t, heartbeat(t, beta, "live", bm.MemberID, 2))
}

// TestAdminBrowserShowsLagAndReasons: the scene's four states, reasons and
// buttons, as the page draws them.
func TestAdminBrowserShowsLagAndReasons(t *testing.T) {
	if testing.Short() {
		t.Skip("runs chromium")
	}
	t.Parallel()
	b := startBroker(t, adminConfig)
	adminScene(t, b)

	html := adminChromium(t, "--virtual-time-budget=1500", "--dump-dom", b.adminURL()+"/")
	for _, want := range []string{
		// orders-0: log end 20, alpha's, alpha reads at 14, committed 12, lag 8.
		`<tr data-partition="orders-0" data-owner="alpha-000001"><td class="mono nowrap">orders-0</td><td class="num state-log">0</td><td class="num" data-log-end="20">20</td>`,
		`<span class="pos" data-fetch-member="alpha-000001" data-fetch-offset="14" title="client alpha at 127.0.0.1:`,
		`<td class="num" data-committed="12" title="metadata &quot;&quot;, leader epoch 0">12</td><td class="num lag behind" data-lag="8" title="log end - committed">8</td>`,
		// orders-1: caught up, no highlight.
		`<td class="num lag" data-lag="0" title="log end - committed">0</td>`,
		// gamma's position is nobody's in particular, and the page says why.
		`data-unattributed="2 members share client id gamma on /127.0.0.1"`,
		`unattributed: 2 members share client id gamma on /127.0.0.1`,
		// Why each generation started, and why each request was fenced.
		`class="timeline-entry current" data-generation="2" data-reason="join"`,
		`class="timeline-entry current" data-generation="3" data-reason="forced"`,
		`<tr data-code="ILLEGAL_GENERATION" data-reason="stale generation">`,
		`<tr data-code="REBALANCE_IN_PROGRESS" data-reason="not the owner">`,
		`<tr data-code="UNKNOWN_MEMBER_ID" data-reason="unknown member">`,
		`<div class="reason">stale generation</div>`,
		// The buttons, and the manual clock's controls.
		`data-expire="alpha-000001"`,
		// alpha was never told of generation 2 (beta's join).
		`alpha-000001<span class="meta"> leader</span><span class="meta lagging" data-known-generation="1"`,
		`data-rebalance="live"`,
		`<section id="controls">`,
		`<button id="advance" type="button">Advance clock</button>`,
		// The lease on one line: a bar and what is left of 30 s.
		`<span class="bar"><i style="width: 94.5%;"></i></span>28.4/30.0 s</span>`,
		// The side panels.
		`<tr data-topic-partition="orders-1"><td class="num">1</td><td class="num">0</td><td class="num">40</td>`,
		`<dd data-storage="commits made durable">3</dd>`,
		// Nobody fetches a partition another member fetches; in reports the
		// count is by connection, and the page says why.
		`<p class="meta" data-double-ownership="0">Owned twice now: 0 partitions fetched by two members in the last 10 s</p>`,
		`<p class="meta" data-double-ownership="0">Owned twice now: 0 partitions fetched by two members in the last 10 s (counted by connection: 2 members share client id gamma on /127.0.0.1)</p>`,
		// The typo, in words.
		`<li data-topic-notice="missing" data-topic="ordrs">unknown topic "ordrs": client delta asked for it; a consumer of it waits until it is created <span class="when">`,
	} {
		require.Contains(t, html, want, "page:\n%s", adminTail(html, 12000))
	}
	live, reports := strings.Index(html, `data-group="live"`), strings.Index(html, `data-group="reports"`)
	require.True(t, live >= 0 && reports > live, "the most recently active group comes first")
}

// TestAdminBrowserButtons: the page's buttons, clicked in turn by a
// script the test adds to the page: "force rebalance" starts generation 2,
// the member's "expire" generation 3 (the group is Empty), "Advance clock"
// moves the manual clock by the milliseconds typed, and "Run expiry step"
// runs it. Each answer is shown beside its button, and the timeline says
// why each generation started.
func TestAdminBrowserButtons(t *testing.T) {
	if testing.Short() {
		t.Skip("runs chromium")
	}
	t.Parallel()
	b := startBroker(t, adminConfig)
	c := wiretest.Dial(t, b.Addr(), "c")
	require.Equal(t, "c-000001", adminJoin(t, c, "live", "", 30*time.Second, "orders").MemberID)

	page := adminPageWithScript(t, b, `
const until = f => new Promise(done => {
  const poll = setInterval(() => { const v = f(); if (v) { clearInterval(poll); done(v); } }, 20);
});
const text = id => (document.getElementById(id) || {}).textContent;
(async () => {
  (await until(() => document.querySelector('[data-rebalance="live"]'))).click();
  await until(() => document.querySelector('[data-group="live"][data-generation="2"]'));
  (await until(() => document.querySelector('[data-expire="c-000001"]'))).click();
  await until(() => document.querySelector('[data-group="live"][data-state="Empty"]'));
  document.getElementById("advance-ms").value = "250";
  document.getElementById("advance").click();
  await until(() => text("control-result"));
  document.body.dataset.advanced = text("control-result");
  document.getElementById("expire").click();
  await until(() => text("control-result") !== document.body.dataset.advanced);
})();`)
	html := adminChromium(t, "--virtual-time-budget=4000", "--dump-dom", page)
	for _, want := range []string{
		`data-group="live" data-state="Empty" data-generation="3"`,
		`<span class="result" data-result="live">POST /v1/groups/live/members/c-000001/expire → 200 {"group":"live","member":"c-000001","generation":3}</span>`,
		`data-advanced="POST /v1/clock/advance → 200 {&quot;now&quot;:&quot;1970-01-01T00:00:00.25Z&quot;,&quot;now_ms&quot;:250}"`,
		`<span id="control-result" class="result">POST /v1/expire → 200 {"expired":[]}</span>`,
		`<b id="now">250 ms</b>`,
		`class="timeline-entry" data-generation="2" data-reason="forced"`,
		`class="timeline-entry current" data-generation="3" data-reason="expiry"`,
	} {
		require.Contains(t, html, want, "page:\n%s", adminTail(html, 12000))
	}
	require.Equal(t, int64(250), b.Now().UnixMilli())
	v, ok := b.Coordinator().Describe("live")
	require.True(t, ok)
	require.Equal(t, int32(3), v.Generation)
	require.Empty(t, v.Members)
}

// TestAdminBrowserFoldsIdleGroups: groups are listed most recently
// active first, and Empty groups with nothing for five minutes are folded
// into one "idle groups" line, which opens on a click.
func TestAdminBrowserFoldsIdleGroups(t *testing.T) {
	if testing.Short() {
		t.Skip("runs chromium")
	}
	t.Parallel()
	b := startBroker(t, adminConfig)
	c := wiretest.Dial(t, b.Addr(), "c")
	for _, g := range []string{"old-lab-1", "old-lab-2"} {
		j := adminJoin(t, c, g, "", 30*time.Second, "orders")
		leave := kmsg.NewPtrLeaveGroupRequest()
		leave.Version, leave.Group, leave.Members = 5, g, []kmsg.LeaveGroupRequestMember{{MemberID: j.MemberID}}
		require.Zero(t, wiretest.Do[*kmsg.LeaveGroupResponse](t, c, leave).ErrorCode)
	}
	_, err := b.Advance(6 * time.Minute)
	require.NoError(t, err)
	adminJoin(t, c, "a-watched", "", 30*time.Second, "orders")
	adminJoin(t, c, "z-watched", "", 30*time.Second, "orders") // the latest: first

	page := adminPageWithScript(t, b, `
const folded = setInterval(() => {
  const idle = document.querySelector("details.idle");
  if (!idle) return;
  clearInterval(folded);
  document.body.dataset.before = [...document.querySelectorAll("article.group")].map(a => a.dataset.group).join(" ");
  idle.querySelector("summary").click();
}, 20);`)
	html := adminChromium(t, "--virtual-time-budget=2000", "--dump-dom", page)
	for _, want := range []string{
		`data-before="z-watched a-watched"`,
		// Folded, each is named with its total lag (none: nothing committed).
		`<details class="idle" data-idle="2" open=""><summary>2 idle groups (Empty, nothing lately):<span class="idle-groups">` +
			`<span class="idle-group" data-idle-group="old-lab-1" data-total-lag="" title="old-lab-1: total lag –"><span class="mono">old-lab-1</span><span class="lagsum">lag –</span></span>` +
			`<span class="idle-group" data-idle-group="old-lab-2" data-total-lag="" title="old-lab-2: total lag –"><span class="mono">old-lab-2</span><span class="lagsum">lag –</span></span>` +
			`</span></summary><article class="group" data-group="old-lab-2"`,
		`data-group="old-lab-1"`,
	} {
		require.Contains(t, html, want, "page:\n%s", adminTail(html, 12000))
	}
}

// TestAdminBrowserShowsResetSentinel: a committed -2 (what kafkajs commits
// when its position fell out of range) is drawn as the reset it stands
// for, with no lag, beside an ordinary commit with its lag.
func TestAdminBrowserShowsResetSentinel(t *testing.T) {
	if testing.Short() {
		t.Skip("runs chromium")
	}
	t.Parallel()
	b := startBroker(t, adminConfig)
	c := wiretest.Dial(t, b.Addr(), "c")
	adminProduce(t, c, "orders", 0, 5)
	adminProduce(t, c, "orders", 1, 5)
	require.Zero(t, adminCommit(t, c, "resetting", "", -1, "orders", 0, -2))
	require.Zero(t, adminCommit(t, c, "resetting", "", -1, "orders", 1, 3))

	html := adminChromium(t, "--virtual-time-budget=1500", "--dump-dom", b.adminURL()+"/")
	for _, want := range []string{
		`<td class="num" data-committed="-2" data-committed-reset="earliest" title="the reset sentinel -2: the consumer resets to the earliest offset at its next offset fetch; metadata &quot;&quot;, leader epoch 0">reset: earliest</td><td class="num lag" title="no lag: the commit is a reset sentinel">–</td>`,
		`<td class="num" data-committed="3" title="metadata &quot;&quot;, leader epoch 0">3</td><td class="num lag behind" data-lag="2" title="log end - committed">2</td>`,
	} {
		require.Contains(t, html, want, "page:\n%s", adminTail(html, 12000))
	}
}
