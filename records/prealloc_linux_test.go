package records

import (
	"bytes"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// requireFallocate skips the test where dir's file system has no
// fallocate (the log then appends plainly; TestAllocateFailsAppendsPlainly
// covers that).
func requireFallocate(t *testing.T, dir string) {
	t.Helper()
	f, err := os.Create(filepath.Join(dir, "probe"))
	require.NoError(t, err)
	defer func() { _ = os.Remove(f.Name()) }()
	defer func() { _ = f.Close() }()
	if err := allocate(f, 0, 4096); errors.Is(err, syscall.EOPNOTSUPP) {
		t.Skipf("no fallocate under %s: %v", dir, err)
	} else {
		require.NoError(t, err)
	}
}

// diskUse returns a file's length and the bytes of disk allocated to it.
func diskUse(t *testing.T, path string) (size, allocated int64) {
	t.Helper()
	var st syscall.Stat_t
	require.NoError(t, syscall.Stat(path, &st))
	return st.Size, st.Blocks * 512
}

// TestSegmentAllocatedOnDisk appends three 1,100-byte batches to a real
// file: it is 1 MiB longer than its data, with the blocks allocated (not
// a sparse file); reads stop at the data; Close truncates it to exactly
// its batches; after a reopen, appends allocate again.
func TestSegmentAllocatedOnDisk(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	requireFallocate(t, dir)
	cfg := testConfig(t, dir)
	l := openWith(t, cfg, 1)
	seg := filepath.Join(dir, "t-0", segmentName(0))
	var want [][]byte
	for i := range 3 {
		produce(t, l, "t", 0, batch1100(t, i))
		want = append(want, stored1100(t, i))
	}
	size, allocated := diskUse(t, seg)
	require.Equal(t, int64(1100+preallocChunkBytes), size)
	require.GreaterOrEqual(t, allocated, int64(1100+preallocChunkBytes))
	require.Equal(t, want, readAll(t, l, "t", 0))
	res, err := l.Read("t", 0, 3, 1<<20, true, nil)
	require.NoError(t, err)
	require.Empty(t, res.Records)
	require.NoError(t, l.Close())
	data, err := os.ReadFile(seg)
	require.NoError(t, err)
	require.Equal(t, bytes.Join(want, nil), data, "Close leaves the batches alone")

	l = open(t, testConfig(t, dir))
	a := produce(t, l, "t", 0, batch1100(t, 3))
	require.Equal(t, int64(3), a.BaseOffset)
	want = append(want, stored1100(t, 3))
	size, _ = diskUse(t, seg)
	require.Equal(t, int64(4400+preallocChunkBytes), size)
	require.Equal(t, want, readAll(t, l, "t", 0))
	require.NoError(t, l.Close())
	data, err = os.ReadFile(seg)
	require.NoError(t, err)
	require.Equal(t, bytes.Join(want, nil), data)
}

// TestRollSealsExactSegment rolls segments of 8 KiB on real files: the
// active one is allocated up to segment.bytes and no further, the sealed
// one holds exactly its seven batches.
func TestRollSealsExactSegment(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	requireFallocate(t, dir)
	cfg := testConfig(t, dir)
	cfg.SegmentBytes = 8192
	l := openWith(t, cfg, 1)
	pdir := filepath.Join(dir, "t-0")
	var want [][]byte
	for i := range 8 {
		produce(t, l, "t", 0, batch1100(t, i))
		want = append(want, stored1100(t, i))
		if i == 0 {
			size, _ := diskUse(t, filepath.Join(pdir, segmentName(0)))
			require.Equal(t, int64(8192), size, "1100+min(1 MiB, 8192-1100)")
		}
	}
	require.Equal(t, []string{segmentName(0), segmentName(7)}, segmentFiles(t, pdir))
	data, err := os.ReadFile(filepath.Join(pdir, segmentName(0)))
	require.NoError(t, err)
	require.Equal(t, bytes.Join(want[:7], nil), data)
	size, _ := diskUse(t, filepath.Join(pdir, segmentName(7)))
	require.Equal(t, int64(8192), size)
}

// TestCrashCopyOnDisk copies a running log's directory as it is, files
// allocated ahead and all (what kill -9 leaves; TestCrash kills a
// process), and opens the copy: every acknowledged batch, nothing cut,
// no Warn about a segment, and the zeros truncated.
func TestCrashCopyOnDisk(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	requireFallocate(t, dir)
	cfg := testConfig(t, dir)
	cfg.SegmentBytes, cfg.CheckpointInterval = 8192, time.Hour
	l := openWith(t, cfg, 1)
	var want [][]byte
	for i := range 10 {
		produce(t, l, "t", 0, batch1100(t, i))
		want = append(want, stored1100(t, i))
	}
	cp := filepath.Join(t.TempDir(), "copy")
	require.NoError(t, os.CopyFS(cp, os.DirFS(dir)))
	newest := filepath.Join(cp, "t-0", segmentName(7))
	size, _ := diskUse(t, newest)
	require.Equal(t, int64(8192), size, "three batches and the space allocated after them")

	logger, logs := newTestLogger(t)
	cfg2 := testConfig(t, cp)
	cfg2.Logger = logger
	l2 := open(t, cfg2)
	require.Equal(t, want, readAll(t, l2, "t", 0))
	require.Zero(t, l2.Stats().CutTails)
	require.Empty(t, logsAbout(logs, slog.LevelWarn, newest))
	require.Empty(t, logs.find(slog.LevelError, ""))
	require.Equal(t, []string{segmentName(0), segmentName(7)}, segmentFiles(t, filepath.Join(cp, "t-0")))
	cuts, err := filepath.Glob(filepath.Join(cp, "t-0", "*.cut-*"))
	require.NoError(t, err)
	require.Empty(t, cuts)
	data, err := os.ReadFile(newest)
	require.NoError(t, err)
	require.Equal(t, bytes.Join(want[7:], nil), data)
}
