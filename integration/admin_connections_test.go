package integration

// The live page's connections panel and GET /v1/connections, with SASL
// on: who is connected as whom.

import (
	"encoding/json"
	"io"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/broker"
	"github.com/minibroker/minibroker/testkit/wiretest"
)

// TestAdminBrowserShowsConnections: a connection that authenticated with
// PLAIN is listed with its client id and user, one that has not with its
// client id alone, in the API and on the page.
func TestAdminBrowserShowsConnections(t *testing.T) {
	if testing.Short() {
		t.Skip("runs chromium")
	}
	t.Parallel()
	b := startBroker(t, adminConfig, func(cfg *broker.Config) { cfg.SASLUsers = map[string]string{"alice": "alice-secret"} })

	authed := wiretest.Dial(t, b.Addr(), "orders-app")
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Version, hs.Mechanism = 1, "PLAIN"
	require.Zero(t, wiretest.Do[*kmsg.SASLHandshakeResponse](t, authed, hs).ErrorCode)
	auth := kmsg.NewPtrSASLAuthenticateRequest()
	auth.Version, auth.SASLAuthBytes = 2, []byte("\x00alice\x00alice-secret")
	require.Zero(t, wiretest.Do[*kmsg.SASLAuthenticateResponse](t, authed, auth).ErrorCode)

	anon := wiretest.Dial(t, b.Addr(), "not-yet")
	versions := kmsg.NewPtrApiVersionsRequest()
	versions.Version = 0
	require.Zero(t, wiretest.Do[*kmsg.ApiVersionsResponse](t, anon, versions).ErrorCode)

	resp, err := http.Get(b.adminURL() + "/v1/connections")
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	var got struct {
		Connections []map[string]any `json:"connections"`
	}
	require.NoError(t, json.Unmarshal(body, &got))
	byRemote := map[string]map[string]any{}
	for _, c := range got.Connections {
		byRemote[c["remote"].(string)] = c
	}
	require.Equal(t, "orders-app", byRemote[authed.LocalAddr()]["client_id"])
	require.Equal(t, "alice", byRemote[authed.LocalAddr()]["user"])
	require.Equal(t, "PLAIN", byRemote[authed.LocalAddr()]["mechanism"])
	require.Equal(t, "not-yet", byRemote[anon.LocalAddr()]["client_id"])
	require.Equal(t, "", byRemote[anon.LocalAddr()]["user"])

	html := adminChromium(t, "--virtual-time-budget=1500", "--dump-dom", b.adminURL()+"/")
	for _, want := range []string{
		`<tr data-remote="` + authed.LocalAddr() + `"><td><div class="mono">orders-app</div><div class="mono meta">` + authed.LocalAddr() + `</div></td><td data-user="alice">alice (PLAIN)</td></tr>`,
		`<tr data-remote="` + anon.LocalAddr() + `"><td><div class="mono">not-yet</div><div class="mono meta">` + anon.LocalAddr() + `</div></td><td data-user=""></td></tr>`,
	} {
		require.Contains(t, html, want, "page:\n%s", adminTail(html, 8000))
	}
}
