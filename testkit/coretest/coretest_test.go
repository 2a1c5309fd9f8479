package coretest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/minibroker/minibroker/clock"
	"github.com/minibroker/minibroker/coordinator"
	"github.com/minibroker/minibroker/offsets"
)

func TestNewTopicsInEveryPart(t *testing.T) {
	t.Parallel()
	store := offsets.NewMemory()
	c := New(t, Config{
		Topics:      map[string]int32{"payments": 1, "orders": 4},
		Coordinator: coordinator.Config{Clock: clock.NewManual(time.UnixMilli(0)), Store: store},
	})
	assert.Equal(t, map[string]int32{"orders": 4, "payments": 1}, c.Catalog.Counts())
	for p := range int32(4) {
		_, err := c.Log.PartitionStats("orders", p)
		require.NoError(t, err, "orders-%d is in the log", p)
	}
	_, err := c.Log.PartitionStats("orders", 4)
	require.Error(t, err, "orders has four partitions")
	require.NoError(t, c.Coordinator.CommitDirect("g", []offsets.Entry{{Topic: "orders", Partition: 3, Offset: 42}}))
	off, ok := store.Lookup("g", "orders", 3)
	require.True(t, ok, "the commit went to the given store")
	assert.Equal(t, int64(42), off.Offset)
}
