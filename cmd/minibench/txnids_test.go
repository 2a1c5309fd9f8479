package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/minibroker/minibroker/internal/testutil"
)

// TestTxnIDsQuick runs "minibench txn-ids" on 30 ids against minibroker
// built from source: every phase reports, and the restart comes up with
// the transactions it aborted.
func TestTxnIDsQuick(t *testing.T) {
	if testing.Short() {
		t.Skip("builds minibroker and starts it")
	}
	dir := t.TempDir()
	bin := testutil.BuildMain(t, "github.com/minibroker/minibroker/cmd/minibroker")
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"txn-ids", "-minibroker", bin, "-work-dir", filepath.Join(dir, "work"),
		"-ids", "30", "-idle", "200ms", "-bystanders", "2", "-workers", "4"}, &stdout, &stderr)
	require.Equal(t, 0, code, "stderr:\n%s\nstdout:\n%s", stderr.String(), stdout.String())
	out := stdout.String()
	require.Regexp(t, `created 30 transactional ids, each with one committed transaction, in \S+\n`, out)
	require.Regexp(t, `transaction log: \d+ bytes\n`, out)
	require.Regexp(t, `idle \S+: CPU \d+\.\d% of one core, disk writes \d+\.\d\d MB/s \(\d+ bytes\)\n`, out)
	require.Regexp(t, `bystander first transaction \(InitProducerId, AddPartitionsToTxn, EndTxn\), 2 ids: p50 \S+, max \S+\n`, out)
	require.Regexp(t, `opened a transaction on each of 30 ids in \S+\n`, out)
	require.Regexp(t, `restart \(\S+\) after SIGKILL with 30 open transactions: ready in \S+\n`, out)
	restart, err := os.ReadFile(filepath.Join(dir, "work", "server.log.restart"))
	require.NoError(t, err)
	require.NotContains(t, string(restart), "level=ERROR")
}

// TestProcUsageReadsThisProcess: the CPU time read from /proc grows as
// the process computes (in 10 ms ticks).
func TestProcUsageReadsThisProcess(t *testing.T) {
	if _, err := os.Stat("/proc/self/io"); err != nil {
		t.Skip("no /proc/<pid>/io here")
	}
	start, written, err := procUsage(os.Getpid())
	require.NoError(t, err)
	require.GreaterOrEqual(t, written, int64(0))
	sum := 0
	testutil.Eventually(t, time.Minute, func() string {
		for i := range 1_000_000 {
			sum += i % 7
		}
		cpu, _, err := procUsage(os.Getpid())
		if err != nil || cpu <= start {
			return fmt.Sprintf("CPU time still %v (%v)", cpu, err)
		}
		return ""
	})
	require.Positive(t, sum)
}
