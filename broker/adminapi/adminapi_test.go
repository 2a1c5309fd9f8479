package adminapi

import (
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/broker"
	"github.com/minibroker/minibroker/testkit/wiretest"
)

// TestAdminIsServed: a broker given New serves the admin API on
// AdminAddr; it reads the same broker's coordinator, and its metrics
// count the broker's requests.
func TestAdminIsServed(t *testing.T) {
	t.Parallel()
	b, err := broker.Start(t.Context(), broker.Config{ManualClock: true, Admin: "127.0.0.1:0", AdminAPI: New, Topics: map[string]int32{"orders": 4}})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, b.Close()) })
	require.NotEmpty(t, b.AdminAddr())
	c := wiretest.Dial(t, b.Addr(), "test")
	j := wiretest.Do[*kmsg.JoinGroupResponse](t, c, wiretest.JoinRequest(3, "g", "", 30*time.Second, "orders"))
	require.Zero(t, j.ErrorCode)

	resp, err := http.Get("http://" + b.AdminAddr() + "/v1/groups/g")
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var got struct {
		Generation int32 `json:"generation"`
		Members    []struct {
			MemberID string `json:"member_id"`
		} `json:"members"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&got))
	require.Equal(t, int32(1), got.Generation)
	require.Len(t, got.Members, 1)
	require.Equal(t, j.MemberID, got.Members[0].MemberID)

	metrics, err := http.Get("http://" + b.AdminAddr() + "/metrics")
	require.NoError(t, err)
	defer metrics.Body.Close()
	text, err := io.ReadAll(metrics.Body)
	require.NoError(t, err)
	for _, series := range []string{
		`minibroker_requests_total{api="JoinGroup",error_code="NONE"} 1`, // the server's observer
		`minibroker_rebalances_total{group="g"} 1`,                       // the coordinator's hook
		"minibroker_offsets_commits_total 0",                             // each part the admin side watches
		"minibroker_records_storage_errors_total 0",
		"minibroker_transactions_open 0",
		"minibroker_memory_max_bytes{",
	} {
		require.Contains(t, string(text), series)
	}
}
