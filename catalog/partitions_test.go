package catalog

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestAddPartitions raises a count durably; equal, fewer, unknown and
// past the cap are refused and change nothing; a failed Prepare leaves
// the count as it was.
func TestAddPartitions(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var prepared []Topic
	fail := false
	cfg := Config{Dir: dir, MaxPartitions: 10, Prepare: func(tp Topic) error {
		if fail {
			return errors.New("disk full")
		}
		prepared = append(prepared, tp)
		return nil
	}}
	c, err := Open(cfg)
	require.NoError(t, err)
	orders, err := c.Create("orders", 2)
	require.NoError(t, err)

	_, err = c.AddPartitions("orders", 2)
	require.ErrorIs(t, err, ErrInvalidPartitions)
	_, err = c.AddPartitions("orders", 1)
	require.ErrorIs(t, err, ErrInvalidPartitions)
	_, err = c.AddPartitions("nope", 3)
	require.ErrorIs(t, err, ErrUnknownTopic)
	_, err = c.AddPartitions("orders", 100_000)
	require.ErrorIs(t, err, ErrInvalidPartitions)
	require.ErrorContains(t, err, "limit 10")
	_, err = c.CheckPartitions("orders", 11)
	require.ErrorIs(t, err, ErrInvalidPartitions)
	fail = true
	_, err = c.AddPartitions("orders", 3)
	require.ErrorIs(t, err, ErrStorage)
	fail = false
	n, _ := c.Partitions("orders")
	require.Equal(t, int32(2), n, "nothing changed")

	got, err := c.AddPartitions("orders", 5)
	require.NoError(t, err)
	require.Equal(t, Topic{Name: "orders", Partitions: 5, ID: orders.ID}, got)
	require.Equal(t, got, prepared[len(prepared)-1], "the logs are prepared at the new count")
	require.Equal(t, int64(5), c.TotalPartitions())

	again, err := Open(Config{Dir: dir})
	require.NoError(t, err)
	require.Equal(t, []Topic{got}, again.List(), "from the journal")
	require.NoError(t, again.Close())
	third, err := Open(Config{Dir: dir})
	require.NoError(t, err)
	require.Equal(t, []Topic{got}, third.List(), "from the folded file")
}
