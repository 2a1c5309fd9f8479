package integration

// kadm's DescribeTransactions and ListTransactions against minibroker's
// transaction coordinator (DescribeTransactions and ListTransactions,
// keys 65 and 66, as Kafka 3.x serves them).

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

func TestKadmDescribeAndListTransactions(t *testing.T) {
	b := startBroker(t, kgoConfig(map[string]int32{"txn-admin": 1}))
	ctx := context.Background()
	done := kgoTxnProducer(t, b, "txn-done")
	kgoProduceTxn(t, done, "txn-admin", true, "c1")
	open := kgoTxnProducer(t, b, "txn-open", kgo.TransactionTimeout(30*time.Second))
	require.NoError(t, open.BeginTransaction())
	require.NoError(t, open.ProduceSync(ctx, &kgo.Record{Topic: "txn-admin", Value: []byte("o1")}).FirstErr())

	adm := b.admin(t)
	listed, err := adm.ListTransactions(ctx, nil, nil)
	require.NoError(t, err)
	got := map[string]string{}
	pids := map[string]int64{}
	for _, l := range listed.Sorted() {
		got[l.TxnID] = l.State
		pids[l.TxnID] = l.ProducerID
	}
	require.Equal(t, map[string]string{"txn-done": "CompleteCommit", "txn-open": "Ongoing"}, got)

	ongoing, err := adm.ListTransactions(ctx, nil, []string{"Ongoing"})
	require.NoError(t, err)
	require.Equal(t, []string{"txn-open"}, ongoing.TransactionalIDs())
	byPID, err := adm.ListTransactions(ctx, []int64{pids["txn-done"]}, nil)
	require.NoError(t, err)
	require.Equal(t, []string{"txn-done"}, byPID.TransactionalIDs())

	described, err := adm.DescribeTransactions(ctx, "txn-open", "txn-done", "txn-nobody")
	require.NoError(t, err)
	o := described["txn-open"]
	require.NoError(t, o.Err)
	require.Equal(t, "Ongoing", o.State)
	require.Equal(t, int32(30_000), o.TimeoutMillis)
	require.Equal(t, pids["txn-open"], o.ProducerID)
	require.Equal(t, int16(0), o.ProducerEpoch)
	require.Positive(t, o.StartTimestamp)
	parts := map[string][]int32{}
	o.Topics.EachPartitions(func(topic string, ps []int32) { parts[topic] = ps })
	require.Equal(t, map[string][]int32{"txn-admin": {0}}, parts)
	d := described["txn-done"]
	require.NoError(t, d.Err)
	require.Equal(t, "CompleteCommit", d.State)
	require.Empty(t, d.Topics, "a completed transaction holds no partitions")
	require.True(t, errors.Is(described["txn-nobody"].Err, kerr.TransactionalIDNotFound), "%v", described["txn-nobody"].Err)

	require.NoError(t, open.EndTransaction(ctx, kgo.TryAbort))
	described, err = adm.DescribeTransactions(ctx, "txn-open")
	require.NoError(t, err)
	require.Equal(t, "CompleteAbort", described["txn-open"].State)
}
