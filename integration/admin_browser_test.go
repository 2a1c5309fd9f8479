package integration

// The live page in a real browser: Debian's chromium, headless, loads the
// page, a join arrives over the wire while the page is open, and the new
// generation appears without a reload; a consumer group shows its epochs;
// the delete button deletes. admin_browser_state_test.go has the page's
// four states and its screenshot, admin_browser_origin_test.go a page from
// another origin that tries to drive the API.
//
// make test installs chromium first (scripts/chromium.sh).

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/testkit/wiretest"
)

// adminChromiumPath is where Debian's chromium package puts the browser.
const adminChromiumPath = "/usr/bin/chromium"

// adminChromiumTimeout bounds one chromium run; a cold start on two cores
// takes a few seconds.
const adminChromiumTimeout = 90 * time.Second

// adminChromium runs headless chromium with args after the common flags
// and returns what it printed on stdout. The browser runs in its own
// process group, killed when the run ends or times out, with a profile
// directory of its own.
func adminChromium(t *testing.T, args ...string) string {
	t.Helper()
	if _, err := os.Stat(adminChromiumPath); err != nil {
		t.Fatalf("%s is missing: run scripts/chromium.sh (make test does) or use -short to skip the browser test", adminChromiumPath)
	}
	// Not t.TempDir: chromium's helpers may still be writing the profile
	// when the test ends, and a failed removal must not fail the test.
	profile, err := os.MkdirTemp("", "minibroker-chromium-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(profile) })

	ctx, cancel := context.WithTimeout(t.Context(), adminChromiumTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, adminChromiumPath, append([]string{
		"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--disable-dev-shm-usage", "--hide-scrollbars", "--user-data-dir=" + profile,
	}, args...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	if cmd.Process != nil {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // any helper left behind
	}
	require.NoError(t, err, "chromium %v: %v\nstderr:\n%s", args, ctx.Err(), adminTail(stderr.String(), 4000))
	return stdout.String()
}

// adminTail returns the last n bytes of s.
func adminTail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}

// TestAdminBrowserShowsNewGeneration: alpha joins; chromium opens the
// page; at the page's second poll of /v1/groups (so the page has already
// drawn generation 1), beta joins over the wire; the page, without a
// reload, shows generation 2 and both generations in the timeline.
func TestAdminBrowserShowsNewGeneration(t *testing.T) {
	if testing.Short() {
		t.Skip("runs chromium")
	}
	t.Parallel()
	second := make(chan struct{}) // closed at the page's second poll
	joined := make(chan struct{}) // closed once beta has joined
	var polls atomic.Int32
	b := startBroker(t, adminConfig)
	// The browser loads the page through a reverse proxy in front of the
	// admin API, which counts the page's polls of /v1/groups and holds
	// the second one until beta has joined.
	proxy := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: "http", Host: b.AdminAddr()})
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == "GET" && r.URL.Path == "/v1/groups" && polls.Add(1) == 2 {
			close(second)
			select { // answer this poll only after the join
			case <-joined:
			case <-time.After(waitTimeout):
			}
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(front.Close)
	alpha := wiretest.Dial(t, b.Addr(), "alpha")
	beta := wiretest.Dial(t, b.Addr(), "beta")
	a := adminJoin(t, alpha, "live", "", 30*time.Second, "orders")
	require.Equal(t, int32(1), a.Generation)

	dom := make(chan string, 1)
	go func() {
		defer close(dom)
		// 4 s of the page's virtual time: eight polls.
		dom <- adminChromium(t, "--virtual-time-budget=4000", "--dump-dom", front.URL+"/")
	}()
	select {
	case <-second:
	case html, ok := <-dom:
		t.Fatalf("the page did not poll twice (chromium ok=%v):\n%s", ok, adminTail(html, 4000))
	case <-time.After(adminChromiumTimeout):
		t.Fatal("the page did not poll twice")
	}
	_, err := b.Advance(300 * time.Millisecond)
	require.NoError(t, err)
	bm := adminJoin(t, beta, "live", "", 30*time.Second, "orders", "payments")
	require.Equal(t, int32(2), bm.Generation)
	close(joined)

	html, ok := <-dom
	require.True(t, ok, "chromium failed")
	for _, want := range []string{
		`data-group="live" data-state="Stable" data-generation="2"`,
		`<span class="generation" data-generation="2">generation 2</span>`,
		`class="timeline-entry" data-generation="1"`,
		`class="timeline-entry current" data-generation="2"`,
		`data-member="alpha-000001"`,
		`data-member="beta-000002"`,
		`data-partition="payments-1" data-owner="beta-000002"`,
		`id="status" class="ok"`,
	} {
		require.Contains(t, html, want, "page after the join:\n%s", adminTail(html, 6000))
	}
	require.Greater(t, polls.Load(), int32(2), "the page went on polling after the join")
}

// TestAdminBrowserShowsConsumerGroup: a consumer (KIP-848) group on the
// live page. a joins, b joins, a catches up, b leaves: the group is
// Reconciling at group epoch 3, and a, at epoch 2, holds orders-0 and
// orders-2 while its target is all of orders. The page shows the type, the
// epochs and the assignor, marks a's epoch as lagging, and shows the
// target beside what a holds, in the members table and in the partition
// table; the timeline says why the last epoch started.
func TestAdminBrowserShowsConsumerGroup(t *testing.T) {
	if testing.Short() {
		t.Skip("runs chromium")
	}
	t.Parallel()
	b := startBroker(t, adminConfig)
	c := wiretest.Dial(t, b.Addr(), "k848")
	beat := func(member string, epoch int32) {
		t.Helper()
		req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		req.Version, req.Group, req.MemberID, req.MemberEpoch = 1, "cg", member, epoch
		if epoch == 0 {
			uniform := "uniform"
			req.RebalanceTimeoutMillis, req.ServerAssignor = 60000, &uniform
			req.SubscribedTopicNames, req.Topics = []string{"orders"}, []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		}
		resp := wiretest.Do[*kmsg.ConsumerGroupHeartbeatResponse](t, c, req)
		require.Zero(t, resp.ErrorCode, "%s at epoch %d: %v", member, epoch, resp.ErrorMessage)
	}
	beat("a", 0)
	beat("b", 0)
	beat("a", 1)
	beat("b", -1)

	html := adminChromium(t, "--virtual-time-budget=1500", "--dump-dom", b.adminURL()+"/")
	for _, want := range []string{
		`data-group="cg" data-state="Reconciling" data-generation="3" data-type="consumer"`,
		`<span class="badge type-consumer" title="consumer protocol (KIP-848)">consumer</span>`,
		`<span class="generation" data-generation="3">group epoch 3</span>`,
		`data-assignment-epoch="3">assignment epoch 3 · assignor uniform</span>`,
		`data-member-epoch="2" title="behind group epoch 3: catches up at its next heartbeat">2 → 3</td>`,
		`orders 0,2<div class="target" data-target="orders 0,1,2,3"`,
		`<tr data-partition="orders-1" data-owner="" data-target="a"><td class="mono nowrap">orders-1</td>`,
		`<span class="unowned">unowned</span><div class="target" data-target="a">→ a</div>`,
		`<tr data-partition="orders-0" data-owner="a" data-target="a">`,
		`<b>epoch 3</b> <span class="reason">leave</span>`,
	} {
		require.Contains(t, html, want, "page:\n%s", adminTail(html, 8000))
	}
}

// TestAdminBrowserDeletesEmptyGroup: the page offers "Delete group" for
// the Empty group only; clicking it (a script the test adds to the page,
// confirming the dialog) sends the DELETE as the page's own controls do,
// through the admin API's guard, and the group is gone.
func TestAdminBrowserDeletesEmptyGroup(t *testing.T) {
	if testing.Short() {
		t.Skip("runs chromium")
	}
	t.Parallel()
	b := startBroker(t, adminConfig)
	c := wiretest.Dial(t, b.Addr(), "c")
	adminJoin(t, c, "live", "", 30*time.Second, "orders")
	left := adminJoin(t, c, "left", "", 30*time.Second, "orders")
	leave := kmsg.NewPtrLeaveGroupRequest()
	leave.Version, leave.Group, leave.Members = 5, "left", []kmsg.LeaveGroupRequestMember{{MemberID: left.MemberID}}
	require.Zero(t, wiretest.Do[*kmsg.LeaveGroupResponse](t, c, leave).ErrorCode)
	require.Zero(t, adminCommit(t, c, "left", "", -1, "orders", 0, 4))

	// The click waits for the button, accepts the confirmation, and
	// clicks once.
	front := adminPageWithScript(t, b, `
window.confirm = () => true;
const clicker = setInterval(() => {
  const b = document.querySelector('[data-delete="left"]');
  if (b) { clearInterval(clicker); b.click(); }
}, 50);`)

	html := adminChromium(t, "--virtual-time-budget=3000", "--dump-dom", front)
	_, ok := b.Coordinator().Describe("left")
	require.False(t, ok, "the click deleted the group; page:\n%s", adminTail(html, 6000))
	require.Contains(t, html, "DELETE /v1/groups/left \u2192 200 {\"group\":\"left\",\"deleted\":true}")
	require.NotContains(t, html, `data-group="left"`, "the next poll no longer shows it")
	require.NotContains(t, html, `data-delete="live"`, "a group with members has no delete button")
	require.Contains(t, html, `data-group="live" data-state="Stable"`)
}

// adminPageWithScript serves the admin API through a reverse proxy that
// adds script to the live page, as a user's clicks, and returns the
// page's URL. The proxy is a server of its own, so the page's origin is
// the proxy's, and its requests reach the API through it with the
// proxy's host: the guard sees the page's own origin, as it would
// without the proxy.
func adminPageWithScript(t *testing.T, b *testBroker, script string) string {
	t.Helper()
	return adminProxy(t, b, script, nil)
}

// adminProxy is adminPageWithScript with wrap, when not nil, around the
// proxy: a handler that sees each of the page's requests first.
func adminProxy(t *testing.T, b *testBroker, script string, wrap func(http.Handler) http.Handler) string {
	t.Helper()
	proxy := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: "http", Host: b.AdminAddr()})
	proxy.ModifyResponse = func(resp *http.Response) error {
		if resp.Request.Method != "GET" || resp.Request.URL.Path != "/" {
			return nil
		}
		page, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return err
		}
		page = bytes.Replace(page, []byte("</body>"), []byte("<script>"+script+"</script></body>"), 1)
		resp.Body = io.NopCloser(bytes.NewReader(page))
		resp.ContentLength = int64(len(page))
		resp.Header.Set("Content-Length", strconv.Itoa(len(page)))
		return nil
	}
	var h http.Handler = proxy
	if wrap != nil {
		h = wrap(proxy)
	}
	front := httptest.NewServer(h)
	t.Cleanup(front.Close)
	return front.URL + "/"
}

// TestAdminBrowserDeletesTopic: each topic on the page has a delete
// button; clicking it (confirming the dialog) sends DELETE
// /v1/topics/{name} through the guard, the topic is gone from the
// catalog and its logs, and the page's next read of the topics no longer
// lists it.
func TestAdminBrowserDeletesTopic(t *testing.T) {
	if testing.Short() {
		t.Skip("runs chromium")
	}
	t.Parallel()
	b := startBroker(t, adminConfig)
	payments, ok := b.Catalog().Lookup("payments")
	require.True(t, ok)
	front := adminPageWithScript(t, b, `
window.confirm = () => true;
const clicker = setInterval(() => {
  const b = document.querySelector('[data-delete-topic="payments"]');
  if (b) { clearInterval(clicker); b.click(); }
}, 50);`)

	html := adminChromium(t, "--virtual-time-budget=5000", "--dump-dom", front)
	_, ok = b.Catalog().Lookup("payments")
	require.False(t, ok, "the click deleted the topic; page:\n%s", adminTail(html, 6000))
	_, err := b.Log().PartitionStats("payments", 0)
	require.Error(t, err, "its logs are gone")
	require.Contains(t, html, "DELETE /v1/topics/payments \u2192 200 {\"topic\":\"payments\",\"topic_id\":\""+payments.ID.String()+"\",\"partitions\":2,\"deleted\":true}")
	require.NotContains(t, html, `<tr data-topic="payments">`, "the next read no longer lists it")
	require.Contains(t, html, `<tr data-topic="orders">`)
}
