package records

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/minibroker/minibroker/catalog"
)

// TestDeleteTopic removes every partition of one topic, from the log,
// the checkpoint and the disk, and nothing of another; the log reopens
// without a word about lost records, and the topic can be made again,
// empty.
func TestDeleteTopic(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	l := open(t, testConfig(t, dir))
	require.NoError(t, l.CreatePartitions("gone", 3))
	require.NoError(t, l.CreatePartitions("gone.x", 1))
	produce(t, l, "gone", 1, build(t, spec{n: 3}))
	produce(t, l, "gone.x", 0, build(t, spec{n: 2}))

	n, err := l.DeleteTopic("gone")
	require.NoError(t, err)
	require.Equal(t, 3, n)
	require.Equal(t, []string{"gone.x-0"}, partitionDirs(t, dir))
	require.Equal(t, []TopicPartition{{"gone.x", 0}}, l.Partitions())
	_, err = l.Read("gone", 1, 0, 1<<20, true, nil)
	require.ErrorIs(t, err, ErrUnknownPartition)
	ckpt, err := os.ReadFile(filepath.Join(dir, checkpointFile))
	require.NoError(t, err)
	require.Equal(t, checkpointMagic+"\ngone.x 0 0 2\n", string(ckpt))
	n, err = l.DeleteTopic("gone")
	require.NoError(t, err)
	require.Zero(t, n, "a second delete finds nothing")
	_, err = l.DeleteTopic("../etc")
	require.ErrorIs(t, err, catalog.ErrInvalidTopic)
	require.NoError(t, l.Close())

	l = openStrict(t, testConfig(t, dir))
	require.Equal(t, []TopicPartition{{"gone.x", 0}}, l.Partitions())
	require.NoError(t, l.CreatePartitions("gone", 1))
	st, err := l.PartitionStats("gone", 0)
	require.NoError(t, err)
	require.Zero(t, st.LogEndOffset, "made again, empty")
}

// TestOpenFinishesDelete: a kill after DeleteTopic renamed a directory
// and before it removed it leaves <dir>.deleting, which Open removes;
// other names stay.
func TestOpenFinishesDelete(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	l := open(t, testConfig(t, dir))
	require.NoError(t, l.CreatePartitions("t", 2))
	produce(t, l, "t", 0, build(t, spec{n: 2}))
	require.NoError(t, l.Close())
	require.NoError(t, os.Rename(filepath.Join(dir, "t-0"), filepath.Join(dir, "t-0.deleting")))
	require.NoError(t, os.Mkdir(filepath.Join(dir, "t-1.9-orphaned"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, checkpointFile), []byte(checkpointMagic+"\nt 1 0 0\n"), 0o644))

	l = openStrict(t, testConfig(t, dir))
	require.Equal(t, []TopicPartition{{"t", 1}}, l.Partitions())
	require.Equal(t, []string{"t-1", "t-1.9-orphaned"}, partitionDirs(t, dir))
}
