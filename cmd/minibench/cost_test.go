package main

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/minibroker/minibroker/tools/loadgen"
)

// TestRenderCost: the cost table lists only the cost scenarios the run
// measured, in costScenarios' order, each server's CPU per request and
// per MB of values ("-" without values), minibroker's over the row's, and
// the load average at the start and the end.
func TestRenderCost(t *testing.T) {
	res := func(ops, requests, bytes int64, cpu time.Duration) *loadgen.Result {
		return &loadgen.Result{Ops: ops, Requests: requests, Bytes: bytes, Elapsed: time.Second, ServerCPU: cpu}
	}
	outcomes := []*outcome{
		{sc: benchScenario{Scenario: loadgen.Scenario{Name: "produce-1KiB"}}, results: map[string]*loadgen.Result{
			serverMinibroker: res(100_000, 50, 100_000_000, 100*time.Millisecond),
			serverKfakeFsync: res(100_000, 100, 100_000_000, 200*time.Millisecond),
		}},
		{sc: benchScenario{Scenario: loadgen.Scenario{Name: "hb-c4"}}, results: map[string]*loadgen.Result{
			serverMinibroker: res(1000, 1000, 0, 10*time.Millisecond),
		}},
		{sc: benchScenario{Scenario: loadgen.Scenario{Name: "commit-c64"}}, results: map[string]*loadgen.Result{
			serverMinibroker: res(1000, 1000, 0, 30*time.Millisecond),
			serverFloor:      res(2000, 2000, 0, 20*time.Millisecond),
		}},
	}
	var b strings.Builder
	meta := runMeta{loadStart: "1.00 2.00 3.00", loadEnd: "4.00 5.00 6.00",
		cpuStart: cpuTimes{busy: 100, idle: 50, steal: 10, ok: true},
		cpuEnd:   cpuTimes{busy: 900, idle: 150, steal: 110, ok: true}}
	renderCost(&b, meta, outcomes)
	got := b.String()
	require.Contains(t, got, "Load average 1.00 2.00 3.00 at the start of the run, 4.00 5.00 6.00 at the end; "+
		"over the run, the machine's CPUs 80% busy, 10% idle, 10% stolen by the hypervisor (/proc/stat).")
	rows := []string{
		"| **commit-c64** | minibroker | 1,000 | 1,000 | 30.0µs | - |  |  |",
		"|  | floor | 2,000 | 2,000 | 10.0µs | - | 3.00× |  |",
		"| **produce-1KiB** | minibroker | 100,000 | 50 | 2.00ms | 1.00ms |  |  |",
		"|  | kfake-fsync | 100,000 | 100 | 2.00ms | 2.00ms | 1.00× | 0.50× |",
	}
	var table []string
	for _, line := range strings.Split(got, "\n") {
		if strings.HasPrefix(line, "| **") || strings.HasPrefix(line, "|  | ") {
			table = append(table, line)
		}
	}
	require.Equal(t, rows, table, "hb-c4 is no cost scenario")

	b.Reset()
	renderCost(&b, runMeta{}, outcomes[1:2])
	require.Empty(t, b.String(), "no cost scenario measured, no table")
}

func TestParseCPUTimes(t *testing.T) {
	// user nice system idle iowait irq softirq steal guest guest_nice
	got := parseCPUTimes("cpu  50923 7 39033 727420 2733 3 15939 1739 11 0")
	require.Equal(t, cpuTimes{busy: 50923 + 7 + 39033 + 3 + 15939, idle: 727420 + 2733, steal: 1739, ok: true}, got)

	for _, line := range []string{"", "cpu0 1 2 3 4 5 6 7 8", "cpu 1 2 3 4 5 6 7", "cpu 1 2 x 4 5 6 7 8"} {
		require.Equal(t, cpuTimes{}, parseCPUTimes(line), "%q", line)
	}
}

func TestCPUShare(t *testing.T) {
	start := cpuTimes{busy: 1000, idle: 1000, steal: 0, ok: true}
	require.Equal(t, "the machine's CPUs 75% busy, 20% idle, 5% stolen by the hypervisor (/proc/stat)",
		cpuShare(start, cpuTimes{busy: 1150, idle: 1040, steal: 10, ok: true}))
	require.Equal(t, "CPU shares unknown (no /proc/stat)", cpuShare(cpuTimes{}, start))
	require.Equal(t, "CPU shares unknown (no time passed)", cpuShare(start, start))
}
