package loadgen

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestTxnScenariosRunClean runs the transactional kinds briefly against
// minibroker and kfake: whole transactions only, and a read_committed
// reader gets exactly the committed records.
func TestTxnScenariosRunClean(t *testing.T) {
	servers := startServers(t, 4)
	// The reader goes first: the topic then holds only its prefill.
	for _, name := range []string{"minibroker", "kfake"} {
		t.Run("consume/"+name, func(t *testing.T) {
			// 20 transactions of 100: the 5th, 10th and 15th are aborted.
			sc := Scenario{Name: "txn-consume", Topic: "bench", Kind: TxnConsume, Partitions: 4, Producers: 2, TxnRecords: 100, Prefill: 2_000}
			r := Run(context.Background(), Target{Name: name, Addr: servers[name].Addr}, sc)
			require.NoError(t, r.Err)
			require.Equal(t, int64(1_700), r.Ops, "the committed records, none of the aborted")
		})
		t.Run("produce/"+name, func(t *testing.T) {
			sc := Scenario{Name: "txn-produce", Kind: TxnProduce, Partitions: 4, Producers: 2, TxnRecords: 10,
				Warmup: 50 * time.Millisecond, Duration: 300 * time.Millisecond}
			r := Run(context.Background(), Target{Name: name, Addr: servers[name].Addr}, sc)
			require.NoError(t, r.Err)
			require.Empty(t, r.Codes)
			require.Positive(t, r.Requests, "committed transactions")
			require.Equal(t, r.Requests*10, r.Ops, "records come in whole transactions")
			require.Equal(t, r.Ops*100, r.Bytes)
			require.Equal(t, uint64(r.Requests), r.Latency.Count(), "one EndTxn latency per transaction")
		})
	}
}
