package admin

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/minibroker/minibroker/server"
)

// TestConnections: GET /v1/connections lists the open connections by
// remote address, with what the server has told of each (client id,
// SASL user and mechanism, TLS) and when it opened; a closed one goes,
// and a report about a connection already closed is ignored.
func TestConnections(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.rec.ConnOpened("127.0.0.1:50002")
	_, err := f.clock.Advance(250 * time.Millisecond)
	require.NoError(t, err)
	f.rec.ConnOpened("127.0.0.1:50001")
	f.rec.ConnOpened("127.0.0.1:50003")
	f.rec.ConnIdentified(server.ConnInfo{Remote: "127.0.0.1:50001", ClientID: "orders-app"})
	f.rec.ConnIdentified(server.ConnInfo{Remote: "127.0.0.1:50001", ClientID: "orders-app", User: "alice", Mechanism: "SCRAM-SHA-512", TLS: true})
	f.rec.ConnIdentified(server.ConnInfo{Remote: "127.0.0.1:50002", ClientID: "kcat"})
	f.rec.ConnClosed("127.0.0.1:50003")
	f.rec.ConnIdentified(server.ConnInfo{Remote: "127.0.0.1:50003", ClientID: "late"})

	code, body := f.do(t, "GET", "/v1/connections", "")
	require.Equal(t, http.StatusOK, code)
	var got connectionsJSON
	require.NoError(t, json.Unmarshal([]byte(body), &got))
	require.Equal(t, int64(250), got.NowMS)
	require.Equal(t, []connectionJSON{
		{Remote: "127.0.0.1:50001", ClientID: "orders-app", User: "alice", Mechanism: "SCRAM-SHA-512", TLS: true, Opened: "1970-01-01T00:00:00.25Z", OpenedMS: 250},
		{Remote: "127.0.0.1:50002", ClientID: "kcat", Opened: "1970-01-01T00:00:00Z", OpenedMS: 0},
	}, got.Connections)

	f.rec.ConnClosed("127.0.0.1:50001")
	f.rec.ConnClosed("127.0.0.1:50002")
	code, body = f.do(t, "GET", "/v1/connections", "")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, `"connections":[]`)
}
