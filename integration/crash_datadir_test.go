package integration

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/minibroker/minibroker/internal/testutil"
	"github.com/minibroker/minibroker/testkit/wiretest"
)

// runServe runs "minibroker serve" with args to completion (it must exit on
// its own within waitTimeout) and returns its exit code and output.
func runServe(t *testing.T, args ...string) (int, string) {
	t.Helper()
	bin := testutil.BuildMain(t, minibrokerPkg)
	ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, append([]string{"serve"}, args...)...).CombinedOutput()
	require.NoError(t, ctx.Err(), "serve did not exit within %v:\n%s", waitTimeout, out)
	if err == nil {
		return 0, string(out)
	}
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit)
	return exit.ExitCode(), string(out)
}

// journalBytes returns the data dir's journal segments and their contents.
func journalBytes(t *testing.T, dir string) map[string]string {
	t.Helper()
	segs, err := filepath.Glob(filepath.Join(dir, "offsets.journal.*"))
	require.NoError(t, err)
	out := map[string]string{}
	for _, s := range segs {
		data, err := os.ReadFile(s)
		require.NoError(t, err)
		out[filepath.Base(s)] = string(data)
	}
	return out
}

// TestDataDirSecondProcessRefused: a second serve on a data dir in use
// exits at once, naming the directory and the process holding it, before
// it opens, reads or repairs anything, even when it would bind the same
// port. The first broker's journal is byte-identical afterwards, and after
// a kill -9 of it every acknowledged commit is there.
func TestDataDirSecondProcessRefused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	args := []string{"--data-dir", dir, "--topic", fmt.Sprintf("storm:%d", stormConns)}
	first := startProcess(t, args...)
	pid := first.cmd.Process.Pid

	acked := make([]atomic.Int64, stormConns)
	var total atomic.Int64
	next := make([]int64, stormConns)
	stop := storm(t, first.Addr, "storm", next, acked, &total)
	eventually(t, func() bool { return total.Load() >= 10*stormConns }, "the storm gets going")

	// While the storm runs: a second broker on another port, then on the
	// first one's port, each refused by the lock.
	for _, listen := range []string{"127.0.0.1:0", first.Addr} {
		code, out := runServe(t, append([]string{"--listen", listen}, args...)...)
		require.Equal(t, 1, code, out)
		require.Contains(t, out, "data dir "+dir+" is in use")
		require.Contains(t, out, fmt.Sprintf("pid %d", pid))
		require.NotContains(t, out, "minibroker ready")
	}
	require.Equal(t, -1, first.signal(t, syscall.SIGKILL, waitTimeout))
	stop()
	before := journalBytes(t, dir)
	require.NotEmpty(t, before, "the storm's commits are in the journal")

	// Once more with the first broker dead: the lock was released with
	// it, and this time the refused start must not be what repairs the
	// journal. A process holding the lock is needed for that.
	holder := startProcess(t, "--data-dir", dir)
	afterRestart := journalBytes(t, dir)
	code, out := runServe(t, "--listen", holder.Addr, "--data-dir", dir)
	require.Equal(t, 1, code, out)
	require.Equal(t, afterRestart, journalBytes(t, dir), "a refused start changes no byte of the holder's journal")

	final := committedStorm(t, holder.Addr, "storm")
	for p := range final {
		require.GreaterOrEqual(t, final[p], acked[p].Load(), "partition %d: an acknowledged commit was lost", p)
	}
	t.Logf("%d commits acknowledged, none lost; journal of %d segment(s) untouched by refused starts", total.Load(), len(before))
}

// TestDataDirCleanStopAfterCrashFoldsEverything: after a kill -9 and a
// restart that commits nothing, a clean stop still leaves offsets.json
// holding every acknowledged commit, and no journal.
func TestDataDirCleanStopAfterCrashFoldsEverything(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	args := []string{"--data-dir", dir, "--topic", fmt.Sprintf("storm:%d", stormConns)}
	p := startProcess(t, args...)
	acked := make([]atomic.Int64, stormConns)
	var total atomic.Int64
	stop := storm(t, p.Addr, "storm", make([]int64, stormConns), acked, &total)
	eventually(t, func() bool { return total.Load() >= 20*stormConns }, "the storm gets going")
	require.Equal(t, -1, p.signal(t, syscall.SIGKILL, waitTimeout))
	stop()
	require.NotEmpty(t, journalBytes(t, dir))

	p = startProcess(t, args...)
	require.Equal(t, 0, p.signal(t, syscall.SIGTERM, waitTimeout), "a clean stop, no commit since the restart")
	assert.Empty(t, journalBytes(t, dir), "the clean stop folded the journal it replayed")
	onDisk := readOffsetsJSON(t, filepath.Join(dir, "offsets.json"))["storm"]
	for i := range stormConns {
		assert.GreaterOrEqual(t, onDisk[fmt.Sprintf("storm-%d", i)], acked[i].Load(), "partition %d: offsets.json lacks an acknowledged commit", i)
	}
}

// journalEnd returns where the records of a preallocated journal segment
// end and its zeros begin. A commit record ends with its commit time, a
// varint whose last byte is not zero.
func journalEnd(data []byte) int {
	return len(bytes.TrimRight(data, "\x00"))
}

// TestDataDirTornTailIsLoggedAndKept: a torn record at the end of the
// newest journal segment (written over the zeros filled ahead of the
// records and lost from a sector boundary on, as a power cut leaves it)
// is cut at start-up, logged at Warn with the file and byte range, and
// kept beside the segment.
func TestDataDirTornTailIsLoggedAndKept(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := startProcess(t, "--data-dir", dir, "--topic", "orders:4")
	c := wiretest.Dial(t, p.Addr, "process-test")
	require.Equal(t, []int16{codeNone}, wiretest.Commit(t, c, directCommit("g", "orders", 0, 7)))
	require.Equal(t, -1, p.signal(t, syscall.SIGKILL, waitTimeout))
	segs, err := filepath.Glob(filepath.Join(dir, "offsets.journal.*"))
	require.NoError(t, err)
	require.Len(t, segs, 1)
	data, err := os.ReadFile(segs[0])
	require.NoError(t, err)
	end := journalEnd(data)
	require.Less(t, end, 512, "the commit's record is in the first sector")
	// A record of 512 bytes of payload whose bytes from the sector
	// boundary at 512 on never reached the disk.
	torn := make([]byte, 8+512)
	copy(torn, []byte{0, 0, 2, 0, 0xde, 0xad, 0xbe, 0xef})
	for i := 8; i < 512-end; i++ {
		torn[i] = 9
	}
	f, err := os.OpenFile(segs[0], os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteAt(torn[:512-end], int64(end))
	require.NoError(t, err)
	require.NoError(t, f.Close())

	p = startProcess(t, "--data-dir", dir)
	logs := p.logs.String()
	require.Regexp(t, regexp.MustCompile(`level=WARN msg="cut torn journal tail" path=`+regexp.QuoteMeta(segs[0])+
		fmt.Sprintf(` from=%d to=%d bytes=520 saved=\S+\.cut-1`, end, end+520)), logs)
	kept, err := os.ReadFile(segs[0] + ".cut-1")
	require.NoError(t, err)
	require.Equal(t, torn, kept, "the torn record, without the zeros after it")
	cut, err := os.ReadFile(segs[0])
	require.NoError(t, err)
	require.Equal(t, data[:end], cut, "the segment is cut back to its records")
	require.Equal(t, map[string]int64{"orders-0": 7}, fetchedOffsets(t, p, "g", "orders", 0))
	require.Equal(t, 0, p.signal(t, syscall.SIGTERM, waitTimeout))
}

// fetchedOffsets fetches group's committed offsets of topic's partitions
// from p, by "topic-partition".
func fetchedOffsets(t *testing.T, p *brokerProcess, group, topic string, partitions ...int32) map[string]int64 {
	t.Helper()
	parts := make([]tp, len(partitions))
	for i, n := range partitions {
		parts[i] = tp{topic, n, 0}
	}
	return fetchOffsets(t, wiretest.Dial(t, p.Addr, "process-test"), group, parts...)
}

// TestDataDirBitRotStopsStartup: a whole last journal record whose
// checksum fails is damage to acknowledged data, not a torn write: start-up
// stops with a message naming the file and the byte, and the file is left
// as it was.
func TestDataDirBitRotStopsStartup(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := startProcess(t, "--data-dir", dir, "--topic", "orders:4")
	require.Equal(t, []int16{codeNone}, wiretest.Commit(t, wiretest.Dial(t, p.Addr, "process-test"), directCommit("g", "orders", 0, 7)))
	require.Equal(t, -1, p.signal(t, syscall.SIGKILL, waitTimeout))
	segs, err := filepath.Glob(filepath.Join(dir, "offsets.journal.*"))
	require.NoError(t, err)
	require.Len(t, segs, 1)
	data, err := os.ReadFile(segs[0])
	require.NoError(t, err)
	data[journalEnd(data)-1] ^= 0x40 // the record's last byte, before the zeros filled ahead
	require.NoError(t, os.WriteFile(segs[0], data, 0o644))

	code, out := runServe(t, "--listen", "127.0.0.1:0", "--data-dir", dir)
	require.Equal(t, 1, code, out)
	require.Contains(t, out, segs[0])
	require.Contains(t, out, "not a torn write")
	after, err := os.ReadFile(segs[0])
	require.NoError(t, err)
	require.Equal(t, data, after)
	_, err = os.Stat(segs[0] + ".cut-1")
	require.ErrorIs(t, err, os.ErrNotExist, "nothing was cut")
}

// TestDataDirRefusesWhatIsNotAFile: a symbolic link named like a journal
// segment, or a FIFO named offsets.json, stops start-up with a message;
// the link's target is untouched and nothing hangs.
func TestDataDirRefusesWhatIsNotAFile(t *testing.T) {
	t.Parallel()
	t.Run("symlinked segment", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		target := filepath.Join(t.TempDir(), "precious")
		require.NoError(t, os.WriteFile(target, []byte("not yours"), 0o644))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "offsets.json"), []byte(`{"version":1,"groups":{}}`), 0o644))
		require.NoError(t, os.Symlink(target, filepath.Join(dir, "offsets.journal.1")))
		code, out := runServe(t, "--listen", "127.0.0.1:0", "--data-dir", dir)
		require.Equal(t, 1, code, out)
		require.Contains(t, out, "offsets.journal.1")
		data, err := os.ReadFile(target)
		require.NoError(t, err)
		require.Equal(t, "not yours", string(data))
	})
	t.Run("fifo offsets.json", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		require.NoError(t, syscall.Mkfifo(filepath.Join(dir, "offsets.json"), 0o644))
		start := time.Now()
		code, out := runServe(t, "--listen", "127.0.0.1:0", "--data-dir", dir)
		require.Equal(t, 1, code, out)
		require.Contains(t, out, "offsets.json")
		require.Contains(t, out, "not a regular file")
		t.Logf("refused in %v", time.Since(start))
	})
}
