package admin

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/minibroker/minibroker/coordinator"
	"github.com/minibroker/minibroker/offsets"
	"github.com/minibroker/minibroker/records"
	"github.com/minibroker/minibroker/txn"
)

func TestTransactionsListsEachTransactionalID(t *testing.T) {
	f := newFixture(t)
	code, body := f.do(t, "GET", "/v1/transactions", "")
	require.Equal(t, http.StatusOK, code)
	requireJSON(t, `{"now": "1970-01-01T00:00:00Z", "now_ms": 0, "transactions": [], "open": 0, "committed": 0, "aborted": 0, "timed_out": 0}`, body)

	tc, err := txn.New(txn.Config{Clock: f.clock, Partitions: f.log, Offsets: f.coord})
	require.NoError(t, err)
	f.srv.txns = tc
	f.rec.Metrics().WatchTransactions(tc.Stats)
	j := f.join(t, "g", "m", time.Minute, "orders")
	pid, epoch, err := tc.InitProducerID("etl", time.Minute, -1, -1)
	require.NoError(t, err)
	_, _, err = tc.InitProducerID("idle", time.Minute, -1, -1)
	require.NoError(t, err)
	require.NoError(t, tc.AddPartitions("etl", pid, epoch, []records.TopicPartition{{Topic: "payments", Partition: 0}}))
	require.NoError(t, tc.AddOffsets("etl", pid, epoch, "g"))
	require.NoError(t, tc.StageOffsets("etl", pid, epoch, "g", func() error {
		return f.coord.StageTxnCommit(pid, coordinator.CommitRequest{Group: "g", MemberID: "m", Generation: j.Generation,
			Entries: []offsets.Entry{{Topic: "orders", Partition: 1, Offset: 12, LeaderEpoch: -1}}})
	}))
	_, err = f.clock.Advance(250 * time.Millisecond)
	require.NoError(t, err)
	code, body = f.do(t, "GET", "/v1/transactions", "")
	require.Equal(t, http.StatusOK, code)
	requireJSON(t, `{"now": "1970-01-01T00:00:00.25Z", "now_ms": 250, "transactions": [
		{"transactional_id": "etl", "producer_id": 0, "epoch": 0, "state": "Ongoing", "timeout_ms": 60000,
		 "partitions": [{"topic": "payments", "partition": 0}], "groups": ["g"],
		 "staged_offsets": [{"group": "g", "topic": "orders", "partition": 1, "offset": 12}], "age_ms": 250, "updated_ms": 0},
		{"transactional_id": "idle", "producer_id": 1, "epoch": 0, "state": "Empty", "timeout_ms": 60000,
		 "partitions": [], "groups": [], "staged_offsets": [], "age_ms": null, "updated_ms": 0}
	], "open": 1, "committed": 0, "aborted": 0, "timed_out": 0}`, body)

	require.NoError(t, tc.EndTxn("etl", pid, epoch, true))
	code, body = f.do(t, "GET", "/metrics", "")
	require.Equal(t, http.StatusOK, code)
	for _, line := range []string{"minibroker_transactions_open 0", `minibroker_transactions_total{outcome="committed"} 1`,
		`minibroker_transactions_total{outcome="aborted"} 0`, `minibroker_transactions_total{outcome="timed_out"} 0`} {
		require.True(t, strings.Contains(body, line+"\n"), "metrics lack %q", line)
	}
	code, body = f.do(t, "GET", "/v1/topics", "")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, `{"partition":0,"log_start_offset":0,"log_end_offset":1,"last_stable_offset":1,`, "payments-0 holds the commit marker")
}
