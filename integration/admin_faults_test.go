package integration

// Faults over the admin API, as the README's curl calls make them: a cut
// member's heartbeat goes unanswered, its hit is listed and counted in
// /metrics, the manual clock and the expiry step end its session, and its
// commit is fenced; the fault is removed by id. The guard refuses a
// foreign origin and a request without a JSON content type.

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/broker"
	"github.com/minibroker/minibroker/testkit/wiretest"
)

// adminFaultsJSON is GET /v1/faults' answer, as far as these tests read
// it.
type adminFaultsJSON struct {
	Faults []struct {
		ID        string `json:"id"`
		Keys      []int  `json:"keys"`
		Member    string `json:"member"`
		Drop      bool   `json:"drop"`
		Hits      int64  `json:"hits"`
		Remaining int    `json:"remaining"`
	} `json:"faults"`
}

// TestAdminFaultMakesAZombie: cut a member's heartbeats over HTTP, and
// the manual clock does the rest.
func TestAdminFaultMakesAZombie(t *testing.T) {
	t.Parallel()
	b := startBroker(t, adminConfig)
	c := wiretest.Dial(t, b.Addr(), "zombie")
	first := adminJoin(t, c, "lab", "", 10*time.Second, "orders")
	survivor := wiretest.Dial(t, b.Addr(), "survivor")
	s := adminJoin(t, survivor, "lab", "", 10*time.Second, "orders")
	j := adminJoin(t, c, "lab", first.MemberID, 10*time.Second, "orders")
	require.Equal(t, s.Generation, j.Generation)
	adminSync(t, c, "lab", j)
	adminSync(t, survivor, "lab", s)

	code, body := adminHTTP(t, "POST", b.adminURL()+"/v1/faults",
		fmt.Sprintf(`{"keys":[12],"group":"lab","member":%q,"drop":true,"count":-1}`, j.MemberID))
	require.Equal(t, http.StatusOK, code, body)
	var injected struct {
		ID string `json:"id"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &injected))
	require.Equal(t, "1", injected.ID)

	hb := kmsg.NewPtrHeartbeatRequest()
	hb.Version, hb.Group, hb.MemberID, hb.Generation = 4, "lab", j.MemberID, j.Generation
	require.NoError(t, c.Send(kmsg.NewRequestFormatter(kmsg.FormatterClientID("zombie")).AppendRequest(nil, hb, 99)))
	var list adminFaultsJSON
	eventually(t, func() bool {
		adminGetJSON(t, b.adminURL()+"/v1/faults", &list)
		return len(list.Faults) == 1 && list.Faults[0].Hits == 1
	}, "the heartbeat hit the fault")
	require.Equal(t, []int{12}, list.Faults[0].Keys)
	require.Equal(t, j.MemberID, list.Faults[0].Member)
	require.Equal(t, -1, list.Faults[0].Remaining)
	fams := adminScrape(t, b.adminURL())
	require.Equal(t, 1.0, adminMetric(fams, "minibroker_faults_applied_total", "action", "drop", "api", "Heartbeat"))
	require.Equal(t, 1.0, adminMetric(fams, "minibroker_faults_live"))

	code, body = adminHTTP(t, "POST", b.adminURL()+"/v1/clock/advance", `{"ms":10001}`)
	require.Equal(t, http.StatusOK, code, body)
	require.Zero(t, heartbeat(t, survivor, "lab", s.MemberID, s.Generation), "the survivor's lease is renewed")
	code, body = adminHTTP(t, "POST", b.adminURL()+"/v1/expire", "")
	require.Equal(t, http.StatusOK, code, body)
	require.JSONEq(t, fmt.Sprintf(`{"expired":[{"group":"lab","member":%q}]}`, j.MemberID), body)

	// The zombie's connection is stalled behind the dropped answer; its
	// commit, on a new connection, is fenced.
	again := wiretest.Dial(t, b.Addr(), "zombie")
	require.Equal(t, kerr.IllegalGeneration.Code, adminCommit(t, again, "lab", j.MemberID, j.Generation, "orders", 0, 7))
	_, ok := b.Coordinator().CommittedOffset("lab", "orders", 0)
	require.False(t, ok)

	code, body = adminHTTP(t, "DELETE", b.adminURL()+"/v1/faults/1", "")
	require.Equal(t, http.StatusOK, code, body)
	adminGetJSON(t, b.adminURL()+"/v1/faults", &list)
	require.Empty(t, list.Faults)
	require.Equal(t, 0.0, adminMetric(adminScrape(t, b.adminURL()), "minibroker_faults_live"))
}

// TestAdminFaultGuard: a page of another origin, or a request without a
// JSON content type, cannot install or remove a fault.
func TestAdminFaultGuard(t *testing.T) {
	t.Parallel()
	b := startBroker(t, adminConfig)
	f, err := b.InjectFault(broker.Fault{Keys: []int16{12}, Drop: true})
	require.NoError(t, err)
	send := func(method, path, contentType, origin string) int {
		ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, method, b.adminURL()+path, strings.NewReader(`{"drop":true}`))
		require.NoError(t, err)
		if contentType != "" {
			req.Header.Set("Content-Type", contentType)
		}
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}
	require.Equal(t, http.StatusForbidden, send("POST", "/v1/faults", "application/json", "http://evil.example"))
	require.Equal(t, http.StatusUnsupportedMediaType, send("POST", "/v1/faults", "", ""))
	require.Equal(t, http.StatusUnsupportedMediaType, send("POST", "/v1/faults", "text/plain", ""))
	require.Equal(t, http.StatusForbidden, send("DELETE", "/v1/faults/"+f.ID(), "application/json", "http://evil.example"))
	require.Equal(t, http.StatusUnsupportedMediaType, send("DELETE", "/v1/faults/"+f.ID(), "", ""))
	require.Len(t, b.Faults(), 1, "nothing was added or removed")
	require.Len(t, b.Logs.Find("admin request refused"), 5)
}
