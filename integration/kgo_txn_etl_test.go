package integration

// A kgo GroupTransactSession ETL: members read a topic in a consumer
// group and write every record to another topic inside transactions
// whose offset commits the group's generation fences (KIP-447). Members
// join and leave mid-run, so partitions move while transactions are
// open; a read_committed reader of the output must find every input
// exactly once.

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
)

// etlMember runs one GroupTransactSession until stop is closed.
type etlMember struct {
	sess *kgo.GroupTransactSession
	done chan struct{}
	mu   sync.Mutex
	// aborted counts transactions End did not commit: the fence at work.
	aborted, committed int
	errs               []error
}

func startETLMember(t *testing.T, b *testBroker, name string, stop <-chan struct{}) *etlMember {
	t.Helper()
	sess, err := kgo.NewGroupTransactSession(
		kgo.SeedBrokers(b.Addr()), kgo.ClientID(name),
		kgo.TransactionalID("etl-"+name), kgo.TransactionTimeout(10*time.Second),
		kgo.ConsumerGroup("etl"), kgo.ConsumeTopics("etl-in"),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.SessionTimeout(kgoSessionTimeout), kgo.HeartbeatInterval(kgoHeartbeat),
		kgo.RebalanceTimeout(kgoRebalanceTimeout), kgo.FetchMaxWait(kgoFetchMaxWait),
		kgo.RetryBackoffFn(func(int) time.Duration { return kgoRetryBackoff }),
		kgo.Balancers(kgo.RoundRobinBalancer()),
	)
	require.NoError(t, err)
	m := &etlMember{sess: sess, done: make(chan struct{})}
	go func() {
		defer close(m.done)
		ctx := context.Background()
		for {
			select {
			case <-stop:
				return
			default:
			}
			pctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
			fs := sess.PollFetches(pctx)
			cancel()
			if fs.IsClientClosed() {
				return
			}
			if fs.NumRecords() == 0 {
				continue
			}
			if err := sess.Begin(); err != nil {
				m.fail(err)
				return
			}
			fs.EachRecord(func(r *kgo.Record) {
				sess.Produce(ctx, &kgo.Record{Topic: "etl-out", Key: r.Key, Value: r.Value}, func(_ *kgo.Record, err error) {
					if err != nil {
						m.fail(err)
					}
				})
			})
			committed, err := sess.End(ctx, kgo.TryCommit)
			m.mu.Lock()
			if committed {
				m.committed++
			} else {
				m.aborted++
			}
			m.mu.Unlock()
			if err != nil {
				m.fail(err)
			}
		}
	}()
	return m
}

func (m *etlMember) fail(err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.errs = append(m.errs, err)
}

func (m *etlMember) close() {
	<-m.done
	m.sess.Close()
}

func TestKgoGroupTransactSessionETLExactlyOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("an ETL of a few thousand records through rebalances")
	}
	b := startBroker(t, kgoConfig(map[string]int32{"etl-in": 3, "etl-out": 3}))
	const n = 3000
	prod, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.DefaultProduceTopic("etl-in"))
	require.NoError(t, err)
	defer prod.Close()
	ctx := context.Background()
	produce := func(from, to int) {
		var recs []*kgo.Record
		for i := from; i < to; i++ {
			recs = append(recs, &kgo.Record{Key: []byte(strconv.Itoa(i % 7)), Value: []byte(strconv.Itoa(i))})
		}
		require.NoError(t, prod.ProduceSync(ctx, recs...).FirstErr())
	}

	stopA, stopB, stopC := make(chan struct{}), make(chan struct{}), make(chan struct{})
	a := startETLMember(t, b, "a", stopA)
	bm := startETLMember(t, b, "b", stopB)
	produce(0, n/3)
	c := startETLMember(t, b, "c", stopC) // a member added mid-run
	produce(n/3, 2*n/3)
	close(stopA) // and one closed mid-run
	a.close()
	produce(2*n/3, n)

	seen := map[string]int{}
	reader, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.ConsumeTopics("etl-out"),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.FetchMaxWait(50*time.Millisecond))
	require.NoError(t, err)
	defer reader.Close()
	rctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	total := 0
	for total < n && rctx.Err() == nil {
		fs := reader.PollFetches(rctx)
		fs.EachRecord(func(r *kgo.Record) {
			seen[string(r.Value)]++
			total++
		})
	}
	close(stopB)
	close(stopC)
	bm.close()
	c.close()
	for _, m := range []*etlMember{a, bm, c} {
		require.Empty(t, m.errs)
	}
	var dups, missing []string
	for i := range n {
		switch seen[strconv.Itoa(i)] {
		case 1:
		case 0:
			missing = append(missing, strconv.Itoa(i))
		default:
			dups = append(dups, fmt.Sprintf("%d x%d", i, seen[strconv.Itoa(i)]))
		}
	}
	require.Empty(t, missing, "every input reaches the output")
	require.Empty(t, dups, "and only once, for a read_committed reader")
	require.Equal(t, n, total)
	t.Logf("transactions: a %d committed %d aborted; b %d/%d; c %d/%d", a.committed, a.aborted, bm.committed, bm.aborted, c.committed, c.aborted)
}
