package compare

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/minibroker/minibroker/broker"
)

// TestCompareETLReadToEnd: readToEnd counts every key of every partition,
// read_uncommitted or read_committed (which skips an aborted
// transaction's records), and stops at the end of each partition, empty
// ones included.
func TestCompareETLReadToEnd(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	b, err := broker.Start(ctx, broker.Config{Topics: map[string]int32{"etl-read": 3}})
	require.NoError(t, err)
	defer b.Close()
	plain, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.DefaultProduceTopic("etl-read"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	require.NoError(t, err)
	defer plain.Close()
	require.NoError(t, plain.ProduceSync(ctx,
		&kgo.Record{Key: []byte("a"), Partition: 0}, &kgo.Record{Key: []byte("a"), Partition: 1},
		&kgo.Record{Key: []byte("b"), Partition: 1}).FirstErr())
	txn, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.DefaultProduceTopic("etl-read"),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.TransactionalID("etl-read"))
	require.NoError(t, err)
	defer txn.Close()
	for _, tc := range []struct {
		key    string
		commit kgo.TransactionEndTry
	}{{"aborted", kgo.TryAbort}, {"committed", kgo.TryCommit}} {
		require.NoError(t, txn.BeginTransaction())
		require.NoError(t, txn.ProduceSync(ctx, &kgo.Record{Key: []byte(tc.key), Partition: 0}).FirstErr())
		require.NoError(t, txn.EndTransaction(ctx, tc.commit))
	}

	got, err := readToEnd(ctx, b.Addr(), "etl-read", 3, false)
	require.NoError(t, err)
	require.Equal(t, map[string]int{"a": 2, "b": 1, "aborted": 1, "committed": 1}, got)
	got, err = readToEnd(ctx, b.Addr(), "etl-read", 3, true)
	require.NoError(t, err)
	require.Equal(t, map[string]int{"a": 2, "b": 1, "committed": 1}, got, "read_committed skips the aborted record")
}
