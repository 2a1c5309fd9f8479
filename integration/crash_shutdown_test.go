package integration

import (
	"fmt"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// shutdownBound is how long the broker may take to exit after SIGTERM.
const shutdownBound = 5 * time.Second

// TestCrashSigtermDuringCommitStorm sends SIGTERM to the broker process
// while 100 connections commit: it exits 0 within shutdownBound, every
// commit acknowledged with NONE is in offsets.json (a clean stop folds the
// journal into it), and no journal segment is left. The goroutine-leak
// half of this check runs in process, where goleak can see the
// goroutines: cmd/minibroker's TestServeShutdownUnderLoad.
func TestCrashSigtermDuringCommitStorm(t *testing.T) {
	t.Parallel()
	const clients = 100
	dir := t.TempDir()
	p := startProcess(t, "--data-dir", dir, "--topic", fmt.Sprintf("storm:%d", clients))

	next := make([]int64, clients)
	for i := range next {
		next[i] = 1
	}
	acked := make([]atomic.Int64, clients)
	var count atomic.Int64
	stop := storm(t, p.Addr, "shutdown", next, acked, &count)
	eventually(t, func() bool { return count.Load() >= 20*clients }, "the storm gets going")

	start := time.Now()
	require.Equal(t, 0, p.signal(t, syscall.SIGTERM, shutdownBound), "exit status after SIGTERM")
	took := time.Since(start)
	stop()
	assert.Contains(t, p.logs.String(), "minibroker stopped")

	onDisk := readOffsetsJSON(t, filepath.Join(dir, "offsets.json"))["shutdown"]
	for i := range clients {
		want := acked[i].Load()
		require.Positive(t, want, "partition %d had a commit acknowledged", i)
		assert.GreaterOrEqual(t, onDisk[fmt.Sprintf("storm-%d", i)], want, "partition %d: an acknowledged commit is not on disk", i)
	}
	journal, err := filepath.Glob(filepath.Join(dir, "offsets.journal.*"))
	require.NoError(t, err)
	assert.Empty(t, journal, "a clean stop leaves only offsets.json")
	t.Logf("exit 0 %v after SIGTERM; %d commits acknowledged by %d clients, all on disk", took.Round(time.Millisecond), count.Load(), clients)
}
