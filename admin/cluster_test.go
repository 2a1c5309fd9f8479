package admin

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestClusterNamesTheBroker: GET /v1/cluster answers the cluster id, the
// broker at the host and port its Metadata advertises, and the clock; an
// API that knows no Kafka address lists no broker.
func TestClusterNamesTheBroker(t *testing.T) {
	t.Parallel()
	f := newFixtureWith(t, fixtureOptions{advertised: "127.0.0.1:19092"})
	code, body := f.do(t, "GET", "/v1/cluster", "")
	require.Equal(t, http.StatusOK, code)
	requireJSON(t, `{"cluster_id":"minibroker","brokers":[{"node_id":0,"host":"127.0.0.1","port":19092}],"clock":"manual"}`, body)

	real := newFixtureWith(t, fixtureOptions{realClock: true})
	code, body = real.do(t, "GET", "/v1/cluster", "")
	require.Equal(t, http.StatusOK, code)
	requireJSON(t, `{"cluster_id":"minibroker","brokers":[],"clock":"real"}`, body)
}
