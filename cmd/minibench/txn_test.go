package main

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/minibroker/minibroker/tools/loadgen"
)

// txnResult is one window's result: ops records in txns transactions over
// one second, every EndTxn taking endTxn.
func txnResult(scenario, server string, ops, txns int64, endTxn time.Duration) *loadgen.Result {
	r := &loadgen.Result{Scenario: scenario, Target: server, Ops: ops, Requests: txns, Bytes: ops * 100,
		Elapsed: time.Second, Latency: loadgen.NewHistogram()}
	for range txns {
		r.Latency.Record(endTxn)
	}
	return r
}

func TestTxnTableAndTargets(t *testing.T) {
	sc := func(name string, kind loadgen.Kind) benchScenario {
		return benchScenario{Scenario: loadgen.Scenario{Name: name, Kind: kind}, about: "about " + name}
	}
	outcomes := []*outcome{
		{sc: sc("txn-100", loadgen.TxnProduce), results: map[string]*loadgen.Result{
			serverMinibroker: txnResult("txn-100", serverMinibroker, 30_000, 300, 2*time.Millisecond),
			serverKfake:      txnResult("txn-100", serverKfake, 60_000, 600, time.Millisecond),
			serverKfakeFsync: txnResult("txn-100", serverKfakeFsync, 10_000, 100, 5*time.Millisecond),
		}},
		{sc: sc("txn-1", loadgen.TxnProduce), results: map[string]*loadgen.Result{
			serverMinibroker: txnResult("txn-1", serverMinibroker, 1_000, 1_000, 3*time.Millisecond),
		}},
		{sc: sc("txn-1-serial", loadgen.TxnProduce), results: map[string]*loadgen.Result{
			serverMinibroker: txnResult("txn-1-serial", serverMinibroker, 300, 300, 500*time.Microsecond),
		}},
		{sc: sc("produce-sync", loadgen.ProduceSync), results: map[string]*loadgen.Result{
			serverMinibroker: txnResult("produce-sync", serverMinibroker, 5, 5, time.Millisecond),
		}},
	}
	disk := &diskResults{syncs: []loadgen.SyncStats{{Size: oneRecordBatchBytes, P50: time.Millisecond, P99: 2 * time.Millisecond}},
		atOnce: loadgen.SyncStats{Size: oneRecordBatchBytes, N: 1600, Writers: 8, Files: 16, P50: 4 * time.Millisecond}}
	var b strings.Builder
	renderTxn(&b, outcomes, disk)
	out := b.String()
	require.Contains(t, out, "| **txn-100** | minibroker | 30,000 |  | 300 | 3.0 | 2.00ms |")
	require.Contains(t, out, "|  | kfake-fsync | 10,000 |  | 100 | 1.0 | 5.00ms |")
	require.Contains(t, out, "| 3.00× |", "minibroker over kfake with fsync")
	require.Contains(t, out, "| 0.50× |", "minibroker over kfake in memory")
	require.Contains(t, out, "| **txn-1** | minibroker | 1,000 |  | 1,000 |")
	require.Contains(t, out, "p50 1.00ms, p99 2.00ms")
	require.Contains(t, out, "8 writers at once, each appending 169 B to one of 16 files and fdatasyncing it, in the same run: p50 4.00ms")
	require.NotContains(t, out, "produce-sync", "the records scenarios have their own table")

	got := map[string]string{}
	for _, tg := range txnTargets(outcomes, disk) {
		got[tg.name] = tg.verdict() + " " + tg.measured
	}
	require.Equal(t, "met 3.00× (30,000 vs 10,000 records/s)", got["transactions of 100 records: records/s ≥ 1× kfake with fsync"])
	require.Equal(t, "not run ", got["transactions of 1 record: records/s ≥ 1× kfake with fsync"])
	require.Equal(t, "not run ", got["read_committed fetch: records/s ≥ 1× kfake in memory"])
	require.Equal(t, "met 0.50× (500µs vs 1.00ms)", got["EndTxn p50 ≤ 3× the disk's single sync p50 (one producer)"])
	require.Equal(t, "met 3.00× (3.00ms vs 1.00ms)", got["EndTxn p50 ≤ 3× the disk's single sync p50 (8 producers)"])
	require.Equal(t, "met 0.75× (3.00ms vs 4.00ms)", got["EndTxn p50 ≤ 3× the sync p50 of 8 writers at once (8 producers)"])
	require.Len(t, got, 7)

	noDisk := map[string]string{}
	for _, tg := range txnTargets(outcomes, nil) {
		noDisk[tg.name] = tg.verdict()
	}
	require.Equal(t, "not run", noDisk["EndTxn p50 ≤ 3× the sync p50 of 8 writers at once (8 producers)"])
}
