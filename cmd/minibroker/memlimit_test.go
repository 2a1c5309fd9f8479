package main

import (
	"log/slog"
	"regexp"
	"runtime/debug"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/minibroker/minibroker/internal/testutil"
	"github.com/minibroker/minibroker/server"
)

func TestMemLimitFor(t *testing.T) {
	t.Parallel()
	const mib = 1 << 20
	cases := []struct {
		name                string
		live, inUse, budget int64
		want                int64
	}{
		{"an idle broker", 10 * mib, 0, 256 * mib, 20*mib + 256*mib + 64*mib},
		{"frames in flight are not state", 200 * mib, 128 * mib, 256 * mib, 144*mib + 256*mib + 64*mib},
		{"more held than the last collection found live", 50 * mib, 128 * mib, 256 * mib, 256*mib + 64*mib},
	}
	for _, c := range cases {
		require.Equal(t, c.want, memLimitFor(c.live, c.inUse, c.budget), c.name)
	}
}

// budgetOf is a memory budget of two lanes of max bytes each, holding none.
func budgetOf(max int64) func() server.MemoryStats {
	return func() server.MemoryStats {
		return server.MemoryStats{Frames: server.LaneStats{Max: max}, Work: server.LaneStats{Max: max}}
	}
}

// Not parallel: the soft memory limit is the process's.
func TestGovernMemorySetsTheLimitAndRestoresIt(t *testing.T) {
	t.Setenv("GOMEMLIMIT", "")
	before := debug.SetMemoryLimit(-1)
	stop := governMemory(budgetOf(100<<20), slog.New(slog.DiscardHandler))
	limit := debug.SetMemoryLimit(-1)
	state := limit - (200<<20 + memLimitSlack) // twice the live heap and stacks
	require.GreaterOrEqual(t, state, int64(0), "limit %d", limit)
	require.Zero(t, state%2, "limit %d", limit)
	stop()
	require.Equal(t, before, debug.SetMemoryLimit(-1), "stop restores the limit found")
}

func TestGovernMemoryLeavesGOMEMLIMITAlone(t *testing.T) {
	t.Setenv("GOMEMLIMIT", "123MiB")
	before := debug.SetMemoryLimit(-1)
	logs := &testutil.Buffer{}
	stop := governMemory(budgetOf(100<<20), slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	require.Equal(t, before, debug.SetMemoryLimit(-1))
	stop()
	require.Equal(t, before, debug.SetMemoryLimit(-1))
	require.Contains(t, logs.String(), "soft memory limit left to GOMEMLIMIT")
}

// The binary keeps its soft limit at memLimitFor its budget: two lanes of
// --max-inflight-bytes, the slack, and twice a state an idle broker's
// heap holds (under 32 MiB).
func TestBinaryGovernsItsMemoryLimit(t *testing.T) {
	t.Parallel()
	p := startBinary(t, "--data-dir", t.TempDir(), "--log-level", "debug", "--max-inflight-bytes", strconv.Itoa(32<<20))
	line := regexp.MustCompile(`msg="soft memory limit set" limit=(\d+)`)
	var m []string
	testutil.Eventually(t, 30*time.Second, func() string {
		if m = line.FindStringSubmatch(p.stderr.String()); m == nil {
			return "no limit logged:\n" + p.stderr.String()
		}
		return ""
	})
	limit, err := strconv.ParseInt(m[1], 10, 64)
	require.NoError(t, err)
	floor := int64(2*32<<20 + memLimitSlack)
	require.GreaterOrEqual(t, limit, floor)
	require.Less(t, limit, floor+2*32<<20, "twice an idle broker's state")
}
