package lab

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/minibroker/minibroker/broker"
)

func TestLabEnsureTopics(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	b, err := broker.Start(ctx, broker.Config{Topics: map[string]int32{"orders": 4, "payments": 2}})
	require.NoError(t, err)
	t.Cleanup(func() { b.Close() })

	require.NoError(t, EnsureTopics(ctx, b.Addr(), map[string]int32{"orders": 4, "audit": 3}))
	require.Equal(t, map[string]int32{"orders": 4, "payments": 2, "audit": 3}, b.Catalog().Counts())
	require.ErrorContains(t, EnsureTopics(ctx, b.Addr(), map[string]int32{"payments": 1}), "has 2 partitions")
	require.Error(t, EnsureTopics(ctx, "127.0.0.1:1", map[string]int32{"orders": 4}))
}
