package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/minibroker/minibroker/broker"
)

// TestProduceSpreadsRecordsOverPartitions produces eight records to a
// topic of four partitions: two land on each, at offsets 0 and 1, and the
// broker's logs end at 2.
func TestProduceSpreadsRecordsOverPartitions(t *testing.T) {
	t.Parallel()
	b, err := broker.Start(context.Background(), broker.Config{Topics: map[string]int32{"orders": 4}})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, b.Close()) })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	var out bytes.Buffer
	require.NoError(t, run(ctx, []string{b.Addr()}, "orders", "r", 8, &out))
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	require.Len(t, lines, 8)
	perPartition := map[string]int{}
	for i, line := range lines {
		f := strings.Fields(line)
		require.Len(t, f, 3, line)
		require.Equal(t, "r-"+string(rune('0'+i)), f[2])
		perPartition[f[0]]++
	}
	require.Equal(t, map[string]int{"0": 2, "1": 2, "2": 2, "3": 2}, perPartition)
	for p := range int32(4) {
		_, end, err := b.Log().Offsets("orders", p)
		require.NoError(t, err)
		require.Equal(t, int64(2), end, "orders-%d", p)
	}
}
