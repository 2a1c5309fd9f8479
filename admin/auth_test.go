package admin

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/minibroker/minibroker/server"
)

// TestFailedAuthenticationsAreShown: the server's failed SASL
// authentications reach minibroker_failed_authentication_total, one
// series per mechanism, read at each scrape; none without SASL.
func TestFailedAuthenticationsAreShown(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	st := server.AuthStats{Failures: map[string]int64{"PLAIN": 7, "SCRAM-SHA-256": 2, "SCRAM-SHA-512": 0, "none": 1}}
	f.rec.Metrics().WatchAuthentication(func() server.AuthStats { return st })
	srv, err := New(Config{Coordinator: f.coord, Catalog: f.catalog, Recorder: f.rec, Clock: f.clock})
	require.NoError(t, err)
	fams := scrape(t, srv.Handler())
	require.Equal(t, 7.0, value(fams, "minibroker_failed_authentication_total", "mechanism", "PLAIN"))
	require.Equal(t, 2.0, value(fams, "minibroker_failed_authentication_total", "mechanism", "SCRAM-SHA-256"))
	require.Equal(t, 0.0, value(fams, "minibroker_failed_authentication_total", "mechanism", "SCRAM-SHA-512"))
	require.Equal(t, 1.0, value(fams, "minibroker_failed_authentication_total", "mechanism", "none"))

	st.Failures["PLAIN"] = 8
	require.Equal(t, 8.0, value(scrape(t, srv.Handler()), "minibroker_failed_authentication_total", "mechanism", "PLAIN"), "read at every scrape")

	st.Failures = map[string]int64{}
	require.NotContains(t, scrape(t, srv.Handler()), "minibroker_failed_authentication_total", "no series with SASL off")
}
