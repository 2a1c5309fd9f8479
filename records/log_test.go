package records

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/minibroker/minibroker/catalog"
)

// TestCreatePartitions creates partitions idempotently, each with its
// directory and first segment, and lists them sorted.
func TestCreatePartitions(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	l := open(t, testConfig(t, dir))
	require.NoError(t, l.CreatePartitions("orders", 2))
	produce(t, l, "orders", 1, build(t, spec{n: 2}))
	require.NoError(t, l.CreatePartitions("orders", 3), "growing keeps what exists")
	require.NoError(t, l.CreatePartitions("orders", 1), "shrinking deletes nothing")
	require.NoError(t, l.CreatePartitions("a.b_c-d", 1))
	require.NoError(t, l.CreatePartitions("empty", 0))
	require.Equal(t, []TopicPartition{{"a.b_c-d", 0}, {"orders", 0}, {"orders", 1}, {"orders", 2}}, l.Partitions())
	for _, name := range []string{"orders-0", "orders-1", "orders-2", "a.b_c-d-0"} {
		require.FileExists(t, filepath.Join(dir, name, segmentName(0)))
	}
	_, hw, err := l.Offsets("orders", 1)
	require.NoError(t, err)
	require.Equal(t, int64(2), hw)
	require.Equal(t, 4, l.Stats().Partitions)

	for _, bad := range []string{"", ".", "..", "a/b", "a b", strings.Repeat("x", 250), "\u00fc"} {
		require.ErrorIs(t, l.CreatePartitions(bad, 1), catalog.ErrInvalidTopic, "%q: the catalog's rule", bad)
	}
	require.NoError(t, l.CreatePartitions(strings.Repeat("x", 249), 1), "the longest name the catalog accepts")
	require.Error(t, l.CreatePartitions("neg", -1))
}

// TestParsePartitionDir reads partition directory names as Kafka writes
// them, the topic possibly holding dashes.
func TestParsePartitionDir(t *testing.T) {
	t.Parallel()
	for name, want := range map[string]TopicPartition{
		"t-0": {"t", 0}, "my-topic-12": {"my-topic", 12}, "a.b-2147483647": {"a.b", 2147483647}, "t--1": {"t-", 1},
	} {
		got, ok := parsePartitionDir(name)
		require.True(t, ok, name)
		require.Equal(t, want, got)
	}
	for _, name := range []string{"t", "t-", "-1", "t-01", "t-+1", "t-2147483648", "t-x", "a b-1", ".-0"} {
		_, ok := parsePartitionDir(name)
		require.False(t, ok, name)
	}
}

// TestInMemoryLog checks Dir "": the same semantics, nothing on disk.
func TestInMemoryLog(t *testing.T) {
	t.Parallel()
	cwd, err := os.Getwd()
	require.NoError(t, err)
	before, err := os.ReadDir(cwd)
	require.NoError(t, err)
	l := openWith(t, testConfig(t, ""), 2)
	raw := build(t, spec{n: 3, codec: CodecLZ4})
	a := produce(t, l, "t", 1, raw)
	require.Equal(t, [][]byte{withBase(raw, a.BaseOffset)}, readAll(t, l, "t", 1))
	after, err := os.ReadDir(cwd)
	require.NoError(t, err)
	require.Equal(t, len(before), len(after), "nothing written to the working directory")
}

// TestOpenRejectsBadConfig checks Config.Validate through Open.
func TestOpenRejectsBadConfig(t *testing.T) {
	t.Parallel()
	for name, cfg := range map[string]Config{
		"segment too small": {Settings: Settings{SegmentBytes: 100}},
		"retention":         {Settings: Settings{RetentionBytes: -2}},
		"message bytes":     {Settings: Settings{MaxMessageBytes: 10}},
		"uncompressed":      {MaxUncompressedBytes: -1},
		"producers":         {MaxProducers: -1},
	} {
		_, err := Open(cfg)
		require.Error(t, err, name)
	}
}

// TestOpenUnusableDir fails on a directory path that is a file.
func TestOpenUnusableDir(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "file")
	require.NoError(t, os.WriteFile(path, nil, 0o644))
	_, err := Open(testConfig(t, path))
	require.Error(t, err)
	require.NotErrorIs(t, err, ErrCorrupt)
}
