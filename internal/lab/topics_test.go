package lab

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestLabEnsureTopics(t *testing.T) {
	t.Parallel()
	b, err := StartBroker(BrokerConfig{Topics: map[string]int32{"orders": 4, "payments": 2}})
	require.NoError(t, err)
	t.Cleanup(func() { b.Close() })
	ctx := testContext(t)

	require.NoError(t, EnsureTopics(ctx, b.Addr, map[string]int32{"orders": 4, "audit": 3}))
	require.Equal(t, map[string]int32{"orders": 4, "payments": 2, "audit": 3}, b.Coordinator.Topics())
	require.ErrorContains(t, EnsureTopics(ctx, b.Addr, map[string]int32{"payments": 1}), "has 2 partitions")
	require.Error(t, EnsureTopics(ctx, "127.0.0.1:1", map[string]int32{"orders": 4}))
}
