package integration

// kgo transactional producers against minibroker's transaction
// coordinator: commit and abort seen by read_committed and
// read_uncommitted consumers, markers taking offsets, and a second
// producer fencing the first.

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// kgoTxnProducer is a transactional kgo producer on b.
func kgoTxnProducer(t *testing.T, b *testBroker, id string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(b.Addr()), kgo.TransactionalID(id),
		kgo.RetryBackoffFn(func(int) time.Duration { return kgoRetryBackoff })}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	return cl
}

// kgoReadAll consumes topic's partition 0 from the start at the given
// isolation level until it has want records (or the deadline), and
// returns offsets and values.
func kgoReadAll(t *testing.T, b *testBroker, topic string, level kgo.IsolationLevel, want int) []kgoRecord {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.ConsumeTopics(topic), kgo.FetchIsolationLevel(level),
		kgo.FetchMaxWait(50*time.Millisecond))
	require.NoError(t, err)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), kgoWait)
	defer cancel()
	var got []kgoRecord
	for len(got) < want && ctx.Err() == nil {
		fs := cl.PollFetches(ctx)
		for _, fe := range fs.Errors() {
			if ctx.Err() == nil {
				t.Fatalf("poll: %v", fe.Err)
			}
		}
		fs.EachRecord(func(r *kgo.Record) {
			got = append(got, kgoRecord{Offset: r.Offset, Key: string(r.Key), Value: string(r.Value)})
		})
	}
	return got
}

func kgoProduceTxn(t *testing.T, cl *kgo.Client, topic string, commit bool, values ...string) {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, cl.BeginTransaction())
	for _, v := range values {
		require.NoError(t, cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte(v)}).FirstErr())
	}
	require.NoError(t, cl.EndTransaction(ctx, kgo.TransactionEndTry(commit)))
}

func TestKgoTransactionCommitAndAbort(t *testing.T) {
	b := startBroker(t, kgoConfig(map[string]int32{"txn-out": 1}))
	cl := kgoTxnProducer(t, b, "txn-a")
	kgoProduceTxn(t, cl, "txn-out", true, "c1", "c2")  // offsets 0, 1; commit marker at 2
	kgoProduceTxn(t, cl, "txn-out", false, "a1", "a2") // 3, 4; abort marker at 5
	kgoProduceTxn(t, cl, "txn-out", true, "c3")        // 6; commit marker at 7

	committed := kgoReadAll(t, b, "txn-out", kgo.ReadCommitted(), 3)
	require.Equal(t, []kgoRecord{{Offset: 0, Value: "c1"}, {Offset: 1, Value: "c2"}, {Offset: 6, Value: "c3"}}, committed)
	all := kgoReadAll(t, b, "txn-out", kgo.ReadUncommitted(), 5)
	require.Equal(t, []kgoRecord{{Offset: 0, Value: "c1"}, {Offset: 1, Value: "c2"}, {Offset: 3, Value: "a1"},
		{Offset: 4, Value: "a2"}, {Offset: 6, Value: "c3"}}, all, "markers take offsets 2, 5 and 7; consumers never see them")

	adm := b.admin(t)
	ends, err := adm.ListEndOffsets(context.Background(), "txn-out")
	require.NoError(t, err)
	end, _ := ends.Lookup("txn-out", 0)
	require.Equal(t, int64(8), end.Offset)
}

func TestKgoTransactionOpenHoldsTheLastStableOffset(t *testing.T) {
	b := startBroker(t, kgoConfig(map[string]int32{"txn-lso": 1}))
	cl := kgoTxnProducer(t, b, "txn-lso")
	kgoProduceTxn(t, cl, "txn-lso", true, "first")
	require.NoError(t, cl.BeginTransaction())
	require.NoError(t, cl.ProduceSync(context.Background(), &kgo.Record{Topic: "txn-lso", Value: []byte("open")}).FirstErr())
	lso, err := b.Log().LastStableOffset("txn-lso", 0)
	require.NoError(t, err)
	require.Equal(t, int64(2), lso, "the open transaction's first offset")
	require.Equal(t, []kgoRecord{{Offset: 0, Value: "first"}}, kgoReadAll(t, b, "txn-lso", kgo.ReadCommitted(), 1))
	require.NoError(t, cl.EndTransaction(context.Background(), kgo.TryCommit))
	require.Equal(t, []kgoRecord{{Offset: 0, Value: "first"}, {Offset: 2, Value: "open"}}, kgoReadAll(t, b, "txn-lso", kgo.ReadCommitted(), 2))
}

func TestKgoTransactionalProducerFencedByASecond(t *testing.T) {
	b := startBroker(t, kgoConfig(map[string]int32{"txn-fence": 1}))
	ctx := context.Background()
	old := kgoTxnProducer(t, b, "txn-shared")
	require.NoError(t, old.BeginTransaction())
	require.NoError(t, old.ProduceSync(ctx, &kgo.Record{Topic: "txn-fence", Value: []byte("zombie")}).FirstErr())

	// The new producer's InitProducerId aborts the old one's transaction
	// and fences its epoch.
	fresh := kgoTxnProducer(t, b, "txn-shared")
	kgoProduceTxn(t, fresh, "txn-fence", true, "owner")
	err := old.EndTransaction(ctx, kgo.TryCommit)
	require.Error(t, err)
	require.ErrorIs(t, err, kerr.ProducerFenced)

	require.Equal(t, []kgoRecord{{Offset: 2, Value: "owner"}}, kgoReadAll(t, b, "txn-fence", kgo.ReadCommitted(), 1),
		"the zombie's record (0) was aborted (marker 1)")
}
