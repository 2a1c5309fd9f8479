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
	renderCost(&b, runMeta{loadStart: "1.00 2.00 3.00", loadEnd: "4.00 5.00 6.00"}, outcomes)
	got := b.String()
	require.Contains(t, got, "Load average 1.00 2.00 3.00 at the start of the run, 4.00 5.00 6.00 at the end.")
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
