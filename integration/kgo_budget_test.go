package integration

// The memory budget under stock kgo clients: consumers catching up on a
// backlog, a fetch limit of 1 GiB and a maximal long poll, each beside a
// producer whose produces must all be acknowledged. The budget is made
// small (a few MiB) so that a backlog of tens of MiB reproduces what 40
// consumers over 500 MB did to the default 128 MiB: before the budget
// reserved once an upper bound, a fetch asked for more while holding its
// first reservation and the budget wedged until FrameReadTimeout closed
// the connections. Every value is incompressible, so that what is stored
// is what is produced. The bystander's latency is logged (go test -v) and
// reported in docs/reliability.md; the tests assert only what cannot
// depend on the machine's speed.

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/broker"
	"github.com/minibroker/minibroker/internal/testutil"
	"github.com/minibroker/minibroker/wireclient"
)

// budgetConfig is a broker with a budget of budget bytes per lane, frames
// of at most that, batches of at most budgetBatchBytes, and waits for the
// budget bounded by 5 s, so that a wedge shows as closed connections
// within the test.
func budgetConfig(budget int64, topics map[string]int32) func(*broker.Config) {
	return func(cfg *broker.Config) {
		kgoConfig(topics)(cfg)
		cfg.MaxInFlightBytes, cfg.MaxFrameBytes = budget, int32(budget)
		cfg.MaxMessageBytes = budgetBatchBytes
		cfg.FrameReadTimeout = 5 * time.Second
	}
}

// budgetBatchBytes is the largest batch of the budget tests' brokers,
// scaled down with the budget as the backlog is (Kafka's default is
// 1 MiB); the producers' batches stay below it.
const budgetBatchBytes = 256 << 10

// budgetProducer is a kgo producer whose batches fit budgetBatchBytes.
func budgetProducer(t *testing.T, b *testBroker, name string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(b.Addr()), kgo.ClientID(name), kgo.ProducerLinger(0),
		kgo.ProducerBatchMaxBytes(budgetBatchBytes - 4<<10)}, opts...)...)
	require.NoError(t, err)
	return cl
}

// budgetCloses returns the connections the broker closed because the
// memory budget did not come in time.
func budgetCloses(b *testBroker) []string {
	var closes []string
	for _, r := range b.Logs.Find("closing connection") {
		if err := fmt.Sprint(r.Attrs["err"]); strings.Contains(err, "memory budget") {
			closes = append(closes, err)
		}
	}
	return closes
}

// noise returns n bytes that do not compress, so that what is stored is
// as large as what is produced.
func noise(n int) []byte {
	b := make([]byte, n)
	r := rand.NewChaCha8([32]byte{})
	_, _ = r.Read(b)
	return b
}

// fillBacklog produces n records of size bytes to topic and waits for
// every acknowledgement.
func fillBacklog(t *testing.T, b *testBroker, topic string, n, size int) {
	t.Helper()
	cl := budgetProducer(t, b, "backlog", kgo.ProducerBatchCompression(kgo.NoCompression()))
	defer cl.Close()
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs []error
	value := noise(size)
	for i := range n {
		wg.Add(1)
		cl.Produce(t.Context(), &kgo.Record{Topic: topic, Key: fmt.Appendf(nil, "%06d", i), Value: value}, func(_ *kgo.Record, err error) {
			defer wg.Done()
			if err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	require.Empty(t, errs, "the backlog is acknowledged")
}

// bystander produces one record of size bytes at a time to topic until
// stop, and returns each produce's latency; every produce must be
// acknowledged.
func bystander(t *testing.T, b *testBroker, topic string, size int) (stop func() []time.Duration) {
	t.Helper()
	cl := budgetProducer(t, b, "bystander")
	ctx, cancel := context.WithCancel(context.Background())
	var lat []time.Duration
	var errs []error
	done := make(chan struct{})
	value := noise(size)
	go func() { // owns lat and errs until done
		defer close(done)
		for ctx.Err() == nil {
			start := time.Now()
			err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: value}).FirstErr()
			if ctx.Err() != nil {
				return
			}
			lat = append(lat, time.Since(start))
			if err != nil {
				errs = append(errs, err)
			}
		}
	}()
	return func() []time.Duration {
		cancel()
		<-done
		cl.Close()
		assert.Empty(t, errs, "every produce of the bystander is acknowledged")
		return lat
	}
}

// percentile returns the p-th percentile of ds (0 < p < 100).
func percentile(ds []time.Duration, p int) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)*p/100]
}

// TestBudgetConsumersCatchUpOnABacklog: six default kgo consumers read an
// 8 MiB backlog through a 2 MiB budget beside a bystander producing
// 64 KiB records: every consumer reads every record, every produce is
// acknowledged, and no connection is closed for want of memory. Each
// Fetch reserves once a bound on what it reads and answers (at most the
// budget) and only gives back; before, a Fetch asked for more while
// holding what it had and every consumer's connection was closed after
// FrameReadTimeout.
func TestBudgetConsumersCatchUpOnABacklog(t *testing.T) {
	t.Parallel()
	const (
		budget    = 2 << 20
		consumers = 6
		records   = 2048
		size      = 4 << 10 // 8 MiB in all
	)
	b := startBroker(t, budgetConfig(budget, map[string]int32{"backlog": 4, "bystander": 1}))
	fillBacklog(t, b, "backlog", records, size)

	stop := bystander(t, b, "bystander", 64<<10)
	var got []*kgoCollector
	for i := range consumers {
		cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.ClientID(fmt.Sprintf("consumer-%d", i)),
			kgo.ConsumeTopics("backlog"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		require.NoError(t, err)
		got = append(got, kgoCollect(t, cl))
	}
	start := time.Now()
	testutil.Eventually(t, time.Minute, func() string {
		for i, c := range got {
			if n := c.count(); n < records {
				return fmt.Sprintf("consumer %d has %d of %d records", i, n, records)
			}
		}
		return ""
	})
	elapsed := time.Since(start)
	lat := stop()
	st := b.MemoryStats()
	t.Logf("%d consumers read %d MiB each in %v; bystander: %d produces, p50 %v, p99 %v, max %v; work lane peak %d KiB, %d waits (%v); frames lane peak %d KiB, %d waits",
		consumers, records*size>>20, elapsed.Round(time.Millisecond), len(lat), percentile(lat, 50), percentile(lat, 99), slices.Max(lat),
		st.Work.Peak>>10, st.Work.Waits, st.Work.WaitTime.Round(time.Millisecond), st.Frames.Peak>>10, st.Frames.Waits)
	for i, c := range got {
		c.mu.Lock()
		assert.Empty(t, c.errs, "consumer %d", i)
		assert.Equal(t, records, c.n, "consumer %d reads each record once", i)
		c.mu.Unlock()
	}
	assert.NotEmpty(t, lat, "the bystander produced beside them")
	assert.Empty(t, budgetCloses(b), "no connection closed by the budget")
	assert.Zero(t, st.Work.Refusals+st.Frames.Refusals)
	assert.LessOrEqual(t, st.Work.Peak, int64(budget), "the work lane never held more than the budget")
}

// TestBudgetHugeFetchLimitAndMaximalLongPoll: a consumer with 1 GiB fetch
// limits and a long poll asking for MinBytes = MaxBytes = 2^31-1 beside a
// trickle producer, through a 2 MiB budget: the consumer reads every
// trickled record, the long poll is answered at its MaxWait with what
// there is, and nothing is closed. Before, the long poll reserved again at
// every wake without giving back what it held, until it waited on itself.
func TestBudgetHugeFetchLimitAndMaximalLongPoll(t *testing.T) {
	t.Parallel()
	const (
		budget  = 2 << 20
		trickle = 24
		size    = 128 << 10 // 3 MiB in all: more than the budget
	)
	b := startBroker(t, budgetConfig(budget, map[string]int32{"trickle": 1}))
	huge, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.ClientID("huge"), kgo.ConsumeTopics("trickle"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxBytes(1<<30), kgo.FetchMaxPartitionBytes(1<<30), kgo.BrokerMaxReadBytes(1<<30))
	require.NoError(t, err)
	got := kgoCollect(t, huge)

	// The maximal long poll, which kgo cannot send (it caps a fetch at
	// 1 GiB): raw Fetch requests asking for 2^31-1 bytes at least and at
	// most, from where the last answer ended.
	type pollResult struct {
		records int
		err     error
	}
	polled := make(chan pollResult, 1)
	go func() {
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		c, err := wireclient.Dial(ctx, b.Addr(), "poll")
		if err != nil {
			polled <- pollResult{err: err}
			return
		}
		defer c.Close()
		var offset int64
		n := 0
		for n < trickle {
			req := kmsg.NewPtrFetchRequest()
			req.Version, req.ReplicaID, req.MaxWaitMillis = 12, -1, 300
			req.MinBytes, req.MaxBytes = math.MaxInt32, math.MaxInt32
			rt := kmsg.NewFetchRequestTopic()
			rt.Topic = "trickle"
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.FetchOffset, rp.PartitionMaxBytes = offset, math.MaxInt32
			rt.Partitions = []kmsg.FetchRequestTopicPartition{rp}
			req.Topics = []kmsg.FetchRequestTopic{rt}
			resp, err := c.Request(ctx, req)
			if err != nil {
				polled <- pollResult{records: n, err: fmt.Errorf("the long poll at offset %d: %w", offset, err)}
				return
			}
			p := resp.(*kmsg.FetchResponse).Topics[0].Partitions[0]
			if p.ErrorCode != 0 {
				polled <- pollResult{records: n, err: kerr.ErrorForCode(p.ErrorCode)}
				return
			}
			for raw := p.RecordBatches; len(raw) > 0; {
				var batch kmsg.RecordBatch
				if err := batch.ReadFrom(raw); err != nil {
					polled <- pollResult{records: n, err: err}
					return
				}
				raw = raw[12+batch.Length:]
				if next := batch.FirstOffset + int64(batch.LastOffsetDelta) + 1; next > offset {
					n += int(next - max(offset, batch.FirstOffset))
					offset = next
				}
			}
		}
		polled <- pollResult{records: n}
	}()

	producer := budgetProducer(t, b, "trickle")
	defer producer.Close()
	value := noise(size)
	var lat []time.Duration
	for range trickle {
		start := time.Now()
		require.NoError(t, producer.ProduceSync(t.Context(), &kgo.Record{Topic: "trickle", Value: value}).FirstErr())
		lat = append(lat, time.Since(start))
	}
	testutil.Eventually(t, time.Minute, func() string {
		if n := got.count(); n < trickle {
			return fmt.Sprintf("the 1 GiB consumer has %d of %d", n, trickle)
		}
		return ""
	})
	var long pollResult
	select {
	case long = <-polled:
	case <-time.After(time.Minute):
		t.Fatal("the long poll was not answered")
	}
	require.NoError(t, long.err)
	assert.Equal(t, trickle, long.records, "the long poll read every record")
	st := b.MemoryStats()
	t.Logf("trickle produce p50 %v, p99 %v; work lane peak %d KiB, waits %d, overdrawn %d",
		percentile(lat, 50), percentile(lat, 99), st.Work.Peak>>10, st.Work.Waits, st.Work.Overdrawn)
	got.mu.Lock()
	assert.Empty(t, got.errs)
	assert.Equal(t, trickle, got.n)
	got.mu.Unlock()
	assert.Empty(t, budgetCloses(b), "no connection closed by the budget")
	assert.Zero(t, st.Work.Refusals+st.Frames.Refusals)
}
