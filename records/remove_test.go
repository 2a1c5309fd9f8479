package records

import (
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// partitionDirs lists the names in a log directory that hold a
// partition or a set-aside one.
func partitionDirs(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var out []string
	for _, e := range entries {
		if e.IsDir() {
			out = append(out, e.Name())
		}
	}
	return out
}

// TestCreatePartitionsAllOrNothing: a create that fails at its fifth
// partition (out of file descriptors) removes the four it made, files
// and directories, logs it at Warn, and holds no descriptor; the same
// create succeeds once the cause is gone.
func TestCreatePartitionsAllOrNothing(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := testConfig(t, dir)
	logger, logs := newTestLogger(t)
	cfg.Logger = logger
	ffs := newFaultFS(osFS{})
	cfg.fs = ffs
	l := open(t, cfg)
	var opens atomic.Int32
	ffs.set(&ffs.open, func(string) error {
		if opens.Add(1) == 5 {
			return syscall.EMFILE
		}
		return nil
	})
	err := l.CreatePartitions("big", 8)
	require.ErrorIs(t, err, ErrStorage)
	require.True(t, errors.Is(err, syscall.EMFILE), "%v", err)
	require.Empty(t, partitionDirs(t, dir), "nothing left on disk")
	require.Empty(t, l.Partitions())
	require.Zero(t, ffs.openNow.Load())
	warns := logs.find(slog.LevelWarn, "partitions of a failed create removed")
	require.Len(t, warns, 1)
	require.Contains(t, warns[0], "partitions=4")

	ffs.set(&ffs.open, nil)
	require.NoError(t, l.CreatePartitions("big", 8))
	require.Len(t, partitionDirs(t, dir), 8)
}

// TestRemovePartition deletes a partition no record was appended to and
// refuses one that holds records.
func TestRemovePartition(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	l := open(t, testConfig(t, dir))
	require.NoError(t, l.CreatePartitions("t", 2))
	produce(t, l, "t", 1, build(t, spec{n: 2}))
	require.NoError(t, l.RemovePartition(TopicPartition{"t", 0}))
	require.Equal(t, []string{"t-1"}, partitionDirs(t, dir))
	require.Equal(t, []TopicPartition{{"t", 1}}, l.Partitions())
	err := l.RemovePartition(TopicPartition{"t", 1})
	require.ErrorIs(t, err, ErrNotEmpty)
	require.ErrorIs(t, l.RemovePartition(TopicPartition{"t", 0}), ErrUnknownPartition)
	require.Equal(t, []string{"t-1"}, partitionDirs(t, dir))
}

// TestSetAside renames a partition's directory out of the log, keeping
// its files; the next Open ignores it with a Warn.
func TestSetAside(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	l, err := openAnyPID(testConfig(t, dir))
	require.NoError(t, err)
	require.NoError(t, l.CreatePartitions("t", 1))
	produce(t, l, "t", 0, build(t, spec{n: 2}))
	to, err := l.SetAside(TopicPartition{"t", 0})
	require.NoError(t, err)
	require.Equal(t, filepath.Join(dir, "t-0.1-orphaned"), to)
	require.Empty(t, l.Partitions())
	require.NoError(t, l.Close())
	require.Equal(t, []string{"t-0.1-orphaned"}, partitionDirs(t, dir))
	require.Equal(t, []string{segmentName(0)}, segmentFiles(t, to))

	logger, logs := newTestLogger(t)
	cfg := testConfig(t, dir)
	cfg.Logger = logger
	l = open(t, cfg)
	require.Empty(t, l.Partitions())
	warns := logs.find(slog.LevelWarn, "ignoring a name that is not a partition directory")
	require.Len(t, warns, 1)
	require.True(t, strings.Contains(warns[0], "t-0.1-orphaned"))
}
