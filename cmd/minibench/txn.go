package main

import (
	"fmt"
	"strings"

	"github.com/minibroker/minibroker/tools/loadgen"
)

// txnScenarios are the transactional scenarios: stock kgo transactional
// producers and a read_committed consumer in this process.
func txnScenarios(cfg *benchConfig, mk func(string, string, loadgen.Scenario) benchScenario) []benchScenario {
	servers := []string{serverMinibroker, serverKfake, serverKfakeFsync}
	prefill := max(10_000, int(500_000*cfg.scale))
	produce := func(records, producers int) loadgen.Scenario {
		return loadgen.Scenario{Kind: loadgen.TxnProduce, TxnRecords: records, ValueBytes: 100, Producers: producers, Servers: servers}
	}
	return []benchScenario{
		mk("txn-1", "8 transactional kgo clients (one transactional id each), each looping begin, one 100-byte record, flush, commit; latency is EndTransaction's",
			produce(1, 8)),
		mk("txn-1-serial", "one transactional kgo client looping begin, one 100-byte record, flush, commit, so that nothing else waits for the disk; latency is EndTransaction's",
			produce(1, 1)),
		mk("txn-100", "4 transactional kgo clients, 100 records of 100 bytes per transaction", produce(100, 4)),
		mk("txn-10k", "2 transactional kgo clients, 10,000 records of 100 bytes per transaction", produce(10_000, 2)),
		mk("txn-read-committed", fmt.Sprintf("%d records of 100 bytes produced once in transactions of 1,000 by 4 clients, one in 5 aborted; each window a new read_committed kgo consumer reads every committed record from the start (window = client start to last record)", prefill),
			loadgen.Scenario{Kind: loadgen.TxnConsume, TxnRecords: 1_000, ValueBytes: 100, Producers: 4, Prefill: prefill, Servers: servers}),
	}
}

// renderTxn renders the transactional scenarios' table.
func renderTxn(b *strings.Builder, outcomes []*outcome, disk *diskResults) {
	var txns []*outcome
	for _, o := range outcomes {
		if o.sc.Kind.Txn() {
			txns = append(txns, o)
		}
	}
	if len(txns) == 0 {
		return
	}
	produce := map[string]bool{}
	for _, o := range txns {
		produce[o.sc.Name] = o.sc.Kind == loadgen.TxnProduce
	}
	b.WriteString("\n### Transactions\n\n")
	b.WriteString("Stock kgo transactional clients in the minibench process. records/s counts committed records (median window); txns/s committed transactions; p50 and p99 are EndTransaction's round trip (the commit answered once durable), or per record for read_committed. `mb ÷ this` divides minibroker's records/s, or CPU/MB, by the row's.\n\n")
	b.WriteString("| scenario | server | records/s | windows | txns/s | MB/s | p50 | p99 | CPU/MB | mb ÷ this records/s | mb ÷ this CPU/MB | codes |\n")
	b.WriteString("|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|---|\n")
	for _, row := range tableRows(txns, (*loadgen.Result).CPUPerMB) {
		r := row.r
		perTxn := "-"
		if produce[r.Scenario] && r.Ops > 0 {
			perTxn = fmtCount(r.MedianRate() * float64(r.Requests) / float64(r.Ops))
		}
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %.1f | %s | %s | %s | %s | %s | %s |\n", row.name, row.server, row.rate, windowRange(r), perTxn, r.MBPerSec(),
			fmtDur(r.Latency.Quantile(0.5)), fmtDur(r.Latency.Quantile(0.99)),
			fmtDur(r.CPUPerMB()), row.rateRatio, row.cpuRatio, formatCodes(r.Codes, r.Unexpected))
	}
	b.WriteString("\nScenarios:\n\n")
	for _, o := range txns {
		fmt.Fprintf(b, "- `%s`: %s.\n", o.sc.Name, o.sc.about)
	}
	if st, ok := disk.single(); ok {
		fmt.Fprintf(b, "\nOne append of %d B + fdatasync on this disk, in the same run: p50 %s, p99 %s.\n", st.Size, fmtDur(st.P50), fmtDur(st.P99))
	}
	if st, ok := disk.concurrent(); ok {
		fmt.Fprintf(b, "\n%d writers at once, each appending %d B to one of %d files and fdatasyncing it, in the same run: p50 %s, p99 %s (the disk's floor for a durable write when %d producers wait for theirs).\n",
			st.Writers, st.Size, st.Files, fmtDur(st.P50), fmtDur(st.P99), st.Writers)
	}
}

// txnTargets evaluates the transactional targets.
func txnTargets(outcomes []*outcome, disk *diskResults) []target {
	ts := &targets{outcomes: outcomes, unit: "records/s"}
	ts.ratio("transactions of 1 record: records/s ≥ 1× kfake with fsync", "txn-1", serverKfakeFsync, 1)
	ts.ratio("transactions of 100 records: records/s ≥ 1× kfake with fsync", "txn-100", serverKfakeFsync, 1)
	ts.ratio("transactions of 10,000 records: records/s ≥ 1× kfake with fsync", "txn-10k", serverKfakeFsync, 1)
	ts.ratio("read_committed fetch: records/s ≥ 1× kfake in memory", "txn-read-committed", serverKfake, 1)
	single, ok := disk.single()
	ts.endTxn("EndTxn p50 ≤ 3× the disk's single sync p50 (one producer)", "txn-1-serial", single, ok)
	ts.endTxn("EndTxn p50 ≤ 3× the disk's single sync p50 (8 producers)", "txn-1", single, ok)
	atOnce, ok := disk.concurrent()
	ts.endTxn(fmt.Sprintf("EndTxn p50 ≤ 3× the sync p50 of %d writers at once (8 producers)", atOnceWriters), "txn-1", atOnce, ok)
	return ts.out
}

// endTxn adds the target EndTxn p50 of scenario ≤ 3× the sync p50 st.
func (ts *targets) endTxn(name, scenario string, st loadgen.SyncStats, measured bool) {
	mb := ts.result(scenario, serverMinibroker)
	if mb == nil || !measured || st.P50 <= 0 {
		ts.add(target{name: name})
		return
	}
	p50 := mb.Latency.Quantile(0.5)
	x := float64(p50) / float64(st.P50)
	ts.add(target{name: name, run: true, ok: x <= 3,
		measured: fmt.Sprintf("%.2f× (%s vs %s)", x, fmtDur(p50), fmtDur(st.P50))})
}
