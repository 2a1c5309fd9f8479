package catalog

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestDeleteIsDurableAndPendingUntilPurged(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	c := open(t, dir)
	orders, err := c.Create("orders", 4)
	require.NoError(t, err)
	_, err = c.Create("keep", 1)
	require.NoError(t, err)

	got, err := c.Delete("orders")
	require.NoError(t, err)
	require.Equal(t, orders, got)
	_, ok := c.Lookup("orders")
	require.False(t, ok)
	_, ok = c.ByID(orders.ID)
	require.False(t, ok)
	require.Equal(t, int64(1), c.TotalPartitions())
	_, err = c.Delete("orders")
	require.ErrorIs(t, err, ErrUnknownTopic, "a second delete finds nothing")
	_, err = c.Create("orders", 2)
	require.ErrorIs(t, err, ErrTopicExists, "the name is taken until the data is purged")

	// A kill now: the restart has the delete pending, from the journal.
	again := open(t, dir)
	require.Equal(t, map[string]ID{"orders": orders.ID}, again.Deleting())
	require.Equal(t, map[string]int32{"keep": 1}, again.Counts())
	require.NoError(t, again.Close())
	third := open(t, dir)
	require.Equal(t, map[string]ID{"orders": orders.ID}, third.Deleting(), "a fold keeps the pending delete in the file")

	require.ErrorIs(t, third.Purge("orders", ID{9}), ErrUnknownTopic, "another id's purge")
	require.NoError(t, third.Purge("orders", orders.ID))
	require.Empty(t, third.Deleting())
	fresh, err := third.Create("orders", 2)
	require.NoError(t, err)
	require.NotEqual(t, orders.ID, fresh.ID, "a topic created again is new")
	require.NoError(t, third.Close())

	last := open(t, dir)
	require.Empty(t, last.Deleting())
	require.Equal(t, []Topic{{Name: "keep", Partitions: 1, ID: last.List()[0].ID}, fresh}, last.List())
}

// TestDeleteFoldCrashReplays is a fold that wrote FileName and died
// before removing the journal: every line of it is passed over by seq, so
// a create, delete, purge and create again of one name loads as the end.
func TestDeleteFoldCrashReplays(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	c := open(t, dir)
	first, err := c.Create("orders", 1)
	require.NoError(t, err)
	_, err = c.Delete("orders")
	require.NoError(t, err)
	require.NoError(t, c.Purge("orders", first.ID))
	second, err := c.Create("orders", 3)
	require.NoError(t, err)
	journal, err := os.ReadFile(filepath.Join(dir, JournalName))
	require.NoError(t, err)
	require.NoError(t, c.Close())
	require.NoError(t, os.WriteFile(filepath.Join(dir, JournalName), journal, 0o644))

	again := open(t, dir)
	require.Equal(t, []Topic{second}, again.List())
	require.Empty(t, again.Deleting())
}

func TestDeleteJournalRefusesWhatDoesNotApply(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	line := `{"op":"delete","topic":"ghost","id":"AQAAAAAAAAAAAAAAAAAAAA","seq":1}` + "\n"
	require.NoError(t, os.WriteFile(filepath.Join(dir, JournalName), []byte(line), 0o644))
	_, err := Open(Config{Dir: dir})
	require.ErrorContains(t, err, `line 1: delete of topic "ghost"`)
}
