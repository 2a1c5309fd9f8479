package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/minibroker/minibroker/tools/loadgen"
)

// oneRecordBatchBytes is the size of a batch of one 100-byte record as
// kgo sends it (61 bytes of batch header, 108 of record): what the disk's
// single sync is measured with.
const oneRecordBatchBytes = 169

// recordScenarios are the scenarios over the topic's records, with a
// stock kgo client in this process.
func recordScenarios(cfg *benchConfig, mk func(string, string, loadgen.Scenario) benchScenario) []benchScenario {
	durable := []string{serverMinibroker, serverKfake, serverKfakeFsync, serverFloor}
	stores := []string{serverMinibroker, serverKfake, serverKfakeFsync}
	prefill := max(1_000, int(2_000_000*cfg.scale))
	return []benchScenario{
		mk("produce-100B", "8 goroutines produce 100-byte random values through one stock kgo client (idempotent, acks all, snappy, 10 ms linger); latency from Produce to the promise",
			loadgen.Scenario{Kind: loadgen.Produce, ValueBytes: 100, Producers: 8, Servers: durable}),
		mk("produce-1KiB", "the same with 1 KiB values",
			loadgen.Scenario{Kind: loadgen.Produce, ValueBytes: 1024, Producers: 8, Servers: durable}),
		mk("produce-sync", "8 goroutines, each producing one 100-byte record and waiting for it (ProduceSync) before the next",
			loadgen.Scenario{Kind: loadgen.ProduceSync, ValueBytes: 100, Producers: 8, Servers: durable}),
		mk("consume-100B", fmt.Sprintf("%d records of 100 bytes produced once; each window a new kgo consumer reads them all from the start (window = client start to last record)", prefill),
			loadgen.Scenario{Kind: loadgen.Consume, ValueBytes: 100, Producers: 8, Prefill: prefill, Servers: stores}),
		mk("e2e-1000", "a producer at 1,000 records/s (100 bytes, no linger) and a consumer group member; latency from produce to poll",
			loadgen.Scenario{Kind: loadgen.EndToEnd, ValueBytes: 100, Rate: 1_000, Servers: stores}),
	}
}

// diskResults is the disk floor measured in this process: appends of one
// size, each followed by an fdatasync, one at a time; and one-record
// appends and syncs by many writers at once over many files (atOnce).
type diskResults struct {
	dir    string
	syncs  []loadgen.SyncStats
	atOnce loadgen.SyncStats
	err    error
}

// The at-once floor: as many writers as txn-1 has producers, over the
// bench topic's partitions.
const (
	atOnceWriters = 8
	atOnceFiles   = 16
)

// measureDisk measures appends and syncs on the disk of the work
// directory: a one-record batch, 16 KiB, 1 MiB.
func measureDisk(cfg *benchConfig, stderr io.Writer) *diskResults {
	d := &diskResults{dir: filepath.Join(cfg.workDir, "data")}
	if d.err = os.MkdirAll(d.dir, 0o755); d.err != nil {
		return d
	}
	for _, m := range []struct{ size, n int }{{oneRecordBatchBytes, 1000}, {16 << 10, 500}, {1 << 20, 200}} {
		st, err := loadgen.MeasureSync(d.dir, m.size, m.n)
		if err != nil {
			d.err = err
			return d
		}
		fmt.Fprintf(stderr, "disk           %7d B + fdatasync: p50 %s p99 %s, %.0f MB/s\n", st.Size, fmtDur(st.P50), fmtDur(st.P99), st.MBPerSec)
		d.syncs = append(d.syncs, st)
	}
	st, err := loadgen.MeasureSyncAtOnce(d.dir, oneRecordBatchBytes, atOnceWriters, atOnceFiles, 200)
	if err != nil {
		d.err = err
		return d
	}
	fmt.Fprintf(stderr, "disk %d writers, %d files: %d B + fdatasync: p50 %s p99 %s\n", st.Writers, st.Files, st.Size, fmtDur(st.P50), fmtDur(st.P99))
	d.atOnce = st
	return d
}

// concurrent is the at-once sync, if measured.
func (d *diskResults) concurrent() (loadgen.SyncStats, bool) {
	if d == nil || d.atOnce.N == 0 {
		return loadgen.SyncStats{}, false
	}
	return d.atOnce, true
}

// single is the one-record sync, if measured.
func (d *diskResults) single() (loadgen.SyncStats, bool) {
	if d == nil || len(d.syncs) == 0 {
		return loadgen.SyncStats{}, false
	}
	return d.syncs[0], true
}

// renderRecords renders the records scenarios' table and the disk's.
func renderRecords(b *strings.Builder, cfg *benchConfig, outcomes []*outcome, disk *diskResults) {
	var recs []*outcome
	for _, o := range outcomes {
		if o.sc.Kind.Records() && !o.sc.Kind.Txn() {
			recs = append(recs, o)
		}
	}
	if len(recs) == 0 {
		return
	}
	b.WriteString("\n### Records\n\n")
	fmt.Fprintf(b, "A stock kgo client (franz-go) in the minibench process, which shares the %d CPUs with the server. records/s is the median window; MB/s counts record values (10^6 bytes); latency is per record (produce to promise, or produce to poll for e2e). CPU/MB is the server's user+system CPU per MB of values. `mb ÷ this` divides minibroker's records/s, or CPU/MB, by the row's. Codes are Kafka errors that failed a record or a fetch.\n\n", cpus())
	b.WriteString("| scenario | server | records/s | windows | MB/s | p50 | p99 | p99.9 | CPU/MB | mb ÷ this records/s | mb ÷ this CPU/MB | codes |\n")
	b.WriteString("|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|---|\n")
	for _, row := range tableRows(recs, (*loadgen.Result).CPUPerMB) {
		r := row.r
		fmt.Fprintf(b, "| %s | %s | %s | %s | %.1f | %s | %s | %s | %s | %s | %s | %s |\n", row.name, row.server, row.rate, windowRange(r), r.MBPerSec(),
			fmtDur(r.Latency.Quantile(0.5)), fmtDur(r.Latency.Quantile(0.99)), fmtDur(r.Latency.Quantile(0.999)),
			fmtDur(r.CPUPerMB()), row.rateRatio, row.cpuRatio, formatCodes(r.Codes, r.Unexpected))
	}
	b.WriteString("\nScenarios:\n\n")
	for _, o := range recs {
		fmt.Fprintf(b, "- `%s`: %s.\n", o.sc.Name, o.sc.about)
	}
	b.WriteString("- Servers: minibroker durable (a fresh --data-dir; acknowledged = fdatasync'd); kfake in memory; kfake-fsync with kfake.DataDir and kfake.SyncWrites; floor = the disk floor: each Produce's batches appended to one file, one fdatasync, then the answer (no validation, index or producer state).\n")
	if disk == nil {
		return
	}
	fmt.Fprintf(b, "\nThe disk floor in this process, on the work directory's disk (%s): appends at the end of one file, each followed by an fdatasync, one at a time.\n\n", cfg.workDir)
	if disk.err != nil {
		fmt.Fprintf(b, "ERROR: %v\n", disk.err)
		return
	}
	b.WriteString("| append + fdatasync | count | p50 | p99 | MB/s |\n|---|--:|--:|--:|--:|\n")
	for _, st := range disk.syncs {
		what := fmtBytes(int64(st.Size))
		if st.Size == oneRecordBatchBytes {
			what += " (one 100-byte record)"
		}
		fmt.Fprintf(b, "| %s | %d | %s | %s | %.0f |\n", what, st.N, fmtDur(st.P50), fmtDur(st.P99), st.MBPerSec)
	}
	if st, ok := disk.concurrent(); ok {
		fmt.Fprintf(b, "| %s, %d writers at once over %d files | %d | %s | %s | %.1f |\n", fmtBytes(int64(st.Size)), st.Writers, st.Files, st.N, fmtDur(st.P50), fmtDur(st.P99), st.MBPerSec)
	}
}

// recordTargets evaluates the targets for the records scenarios.
func recordTargets(outcomes []*outcome, disk *diskResults) []target {
	ts := &targets{outcomes: outcomes, unit: "records/s"}
	ts.ratio("durable produce, 100 B: records/s ≥ 1.5× kfake with fsync", "produce-100B", serverKfakeFsync, 1.5)
	ts.ratio("durable produce, 100 B: records/s ≥ 1× kfake in memory", "produce-100B", serverKfake, 1)
	ts.ratio("durable produce, 1 KiB: records/s ≥ 1.5× kfake with fsync", "produce-1KiB", serverKfakeFsync, 1.5)
	ts.ratio("durable produce, 1 KiB: records/s ≥ 1× kfake in memory", "produce-1KiB", serverKfake, 1)
	ts.ratio("one record at a time per goroutine: records/s ≥ 5× kfake with fsync", "produce-sync", serverKfakeFsync, 5)
	name := "one record at a time: p50 ≤ 2× the disk's single sync p50"
	mb := ts.result("produce-sync", serverMinibroker)
	if st, ok := disk.single(); mb != nil && ok {
		p50 := mb.Latency.Quantile(0.5)
		x := float64(p50) / float64(st.P50)
		ts.add(target{name: name, run: true, ok: x <= 2,
			measured: fmt.Sprintf("%.2f× (%s vs %s)", x, fmtDur(p50), fmtDur(st.P50))})
	} else {
		ts.add(target{name: name})
	}
	ts.ratio("fetch: records/s ≥ 1× kfake in memory", "consume-100B", serverKfake, 1)
	name = "produce-to-consume p99 < 10 ms at 1,000 records/s"
	if mb := ts.result("e2e-1000", serverMinibroker); mb != nil {
		p99 := mb.Latency.Quantile(0.99)
		ts.add(target{name: name, run: true, ok: p99 < 10*time.Millisecond, measured: fmtDur(p99)})
	} else {
		ts.add(target{name: name})
	}
	return ts.out
}
