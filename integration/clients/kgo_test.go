package clients

// franz-go's kgo v1.22.3, minibroker's first judge, as the reference the
// other clients are compared with. Its producer is idempotent by default
// (InitProducerId, then batches with a producer id), its partitioner hashes
// the key with murmur2 (sticky for keyless records), and group members
// commit on a 5 s timer, on revocation and on Close.

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// kgoClient is franz-go's kgo, the reference the others are compared with.
func kgoClient() client {
	return client{name: "kgo", produce: kgoProduce, join: kgoJoin("earliest"), reset: kgoJoin}
}

// kgoProduce produces recs with kgo's defaults (idempotent).
func kgoProduce(t *testing.T, addr, topic string, recs []kv) {
	t.Helper()
	kgoProduceWith(t, addr, topic, recs)
}

// kgoProduceWith is kgoProduce with opts added to kgo's defaults.
func kgoProduceWith(t *testing.T, addr, topic string, recs []kv, opts ...kgo.Opt) {
	t.Helper()
	log := newClientLog(t, "kgo producer")
	opts = append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(topic), kgo.WithLogger(kgoLogger(log, kgo.LogLevelInfo))}, opts...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
	defer cancel()
	krs := make([]*kgo.Record, len(recs))
	for i, r := range recs {
		krs[i] = &kgo.Record{Key: r.Key, Value: r.Value}
	}
	if err := cl.ProduceSync(ctx, krs...).FirstErr(); err != nil {
		t.Fatalf("kgo produce: %v", err)
	}
}

// kgoJoin returns a joinFunc for kgo group members resetting to policy
// (ConsumeResetOffset), with the test's heartbeat interval, a 100 ms auto
// commit instead of 5 s, metadata refreshes allowed every 250 ms instead of
// 5 s (kgo resets an out-of-range partition after a metadata refresh), and
// fetches that wait at most 100 ms instead of 5 s for data (a partition
// reset while a fetch waits is fetched only once that fetch returns).
func kgoJoin(policy string) joinFunc {
	reset := kgo.NewOffset().AtStart()
	if policy == "latest" {
		reset = kgo.NewOffset().AtEnd()
	}
	return func(t *testing.T, addr, group, topic, id string, l *ledger) func() {
		t.Helper()
		log := newClientLog(t, "kgo "+id)
		cl, err := kgo.NewClient(
			kgo.SeedBrokers(addr), kgo.ClientID(id),
			kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(reset),
			kgo.HeartbeatInterval(heartbeat),
			kgo.AutoCommitInterval(100*time.Millisecond),
			kgo.MetadataMinAge(250*time.Millisecond),
			kgo.FetchMaxWait(100*time.Millisecond),
			kgo.WithLogger(kgoLogger(log, kgo.LogLevelDebug)),
		)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			for {
				fs := cl.PollFetches(ctx)
				if ctx.Err() != nil || fs.IsClientClosed() {
					return
				}
				fs.EachRecord(func(r *kgo.Record) {
					l.add(consumed{id, r.Partition, r.Offset, r.Key, r.Value})
				})
			}
		}()
		leave := sync.OnceFunc(func() {
			cancel()
			<-done
			cl.Close() // commits what was polled, leaves
		})
		t.Cleanup(leave)
		return leave
	}
}

// TestKgoGroupConsumesEachRecordOnce: see testGroupOnce.
func TestKgoGroupConsumesEachRecordOnce(t *testing.T) {
	t.Parallel()
	testGroupOnce(t, kgoClient())
}

// TestKgoRebalance: see testGroupRebalance.
func TestKgoRebalance(t *testing.T) {
	t.Parallel()
	testGroupRebalance(t, kgoClient())
}
