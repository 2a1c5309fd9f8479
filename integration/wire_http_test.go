package integration

import (
	"io"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestWireHTTPOnTheKafkaPortNamesTheAdminAPI: a browser or curl pointed
// at the Kafka port instead of the admin API gets a 400 whose one line
// names the admin API's address, the one the broker bound (server/http.go),
// and the broker logs it at Warn. Kafka closes such a connection without a
// word (docs/behavior-matrix.md, wire-http-on-kafka-port).
func TestWireHTTPOnTheKafkaPortNamesTheAdminAPI(t *testing.T) {
	t.Parallel()
	b := startBroker(t, adminConfig)
	resp, err := (&http.Client{Timeout: waitTimeout}).Get("http://" + b.Addr() + "/")
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
	assert.Equal(t, "this port speaks the Kafka protocol, not HTTP; the admin API and live page are at "+b.adminURL()+"/\n", string(body))

	logged := b.Logs.Find("closing connection: the request looks like HTTP, and this port speaks the Kafka protocol")
	require.Len(t, logged, 1)
	assert.Equal(t, b.adminURL()+"/", logged[0].Attrs["admin"])
	assert.Equal(t, "GET", logged[0].Attrs["method"])

	// The admin API itself answers at that address.
	page, err := (&http.Client{Timeout: waitTimeout}).Get(b.adminURL() + "/v1/groups")
	require.NoError(t, err)
	page.Body.Close()
	assert.Equal(t, http.StatusOK, page.StatusCode)
}
