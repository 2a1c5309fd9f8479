package integration

// franz-go kgo producers and consumers moving records through minibroker:
// a stock producer into a consumer group, a plain consumer, every
// compression codec, and topics created on first use.

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/minibroker/minibroker/broker"
	"github.com/minibroker/minibroker/coordinator"
	"github.com/minibroker/minibroker/internal/testutil"
	"github.com/minibroker/minibroker/records"
)

// kgoRecord is a record as the tests compare it.
type kgoRecord struct {
	Offset     int64
	Key, Value string
}

// kgoCollector gathers what a consumer polls, per partition in the order
// polled, and the poll errors.
type kgoCollector struct {
	mu     sync.Mutex
	byPart map[int32][]kgoRecord // guarded by mu
	n      int                   // guarded by mu
	errs   []error               // guarded by mu
	done   chan struct{}
}

// kgoCollect polls cl until the test ends or cl is closed.
func kgoCollect(t *testing.T, cl *kgo.Client) *kgoCollector {
	t.Helper()
	c := &kgoCollector{byPart: map[int32][]kgoRecord{}, done: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		defer close(c.done)
		for ctx.Err() == nil {
			fs := cl.PollFetches(ctx)
			if fs.IsClientClosed() {
				return
			}
			c.mu.Lock()
			for _, fe := range fs.Errors() {
				if !errors.Is(fe.Err, context.Canceled) {
					c.errs = append(c.errs, fmt.Errorf("%s-%d: %w", fe.Topic, fe.Partition, fe.Err))
				}
			}
			fs.EachRecord(func(r *kgo.Record) {
				c.byPart[r.Partition] = append(c.byPart[r.Partition], kgoRecord{r.Offset, string(r.Key), string(r.Value)})
				c.n++
			})
			c.mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		cancel()
		cl.Close()
		<-c.done
	})
	return c
}

func (c *kgoCollector) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

func (c *kgoCollector) snapshot() (map[int32][]kgoRecord, []error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[int32][]kgoRecord{}
	for p, rs := range c.byPart {
		out[p] = slices.Clone(rs)
	}
	return out, slices.Clone(c.errs)
}

// kgoProduceAll produces n records keyed k-<i> with value <prefix>-<i>
// to topic with a producer built from opts, and returns them per
// partition in offset order, after checking that the offsets of each
// partition are 0, 1, 2, ... in the order the records were produced.
func kgoProduceAll(t *testing.T, b *testBroker, topic, prefix string, n int, opts ...kgo.Opt) map[int32][]kgoRecord {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(b.Addr()), kgo.ClientID("producer")}, opts...)...)
	require.NoError(t, err)
	defer cl.Close()
	recs := make([]*kgo.Record, n)
	for i := range recs {
		recs[i] = &kgo.Record{Topic: topic, Key: fmt.Appendf(nil, "k-%04d", i), Value: fmt.Appendf(nil, "%s-%04d", prefix, i)}
	}
	ctx, cancel := context.WithTimeout(t.Context(), kgoWait)
	defer cancel()
	require.NoError(t, cl.ProduceSync(ctx, recs...).FirstErr())
	out := map[int32][]kgoRecord{}
	for _, r := range recs { // in produce order
		got := out[r.Partition]
		require.Equal(t, int64(len(got)), r.Offset, "%s-%d: offsets follow the produce order, without gaps", topic, r.Partition)
		out[r.Partition] = append(got, kgoRecord{r.Offset, string(r.Key), string(r.Value)})
	}
	return out
}

// kgoStoredBatches reads a partition's stored batches from the broker's
// log and returns each one's codec and producer id.
func kgoStoredBatches(t *testing.T, b *testBroker, topic string, partition int32) (codecs []records.Codec, pids []int64) {
	t.Helper()
	res, err := b.Log().Read(topic, partition, 0, 64<<20, true, nil)
	require.NoError(t, err)
	for raw := res.Records; len(raw) > 0; {
		size := int(binary.BigEndian.Uint32(raw[8:])) + 12
		codecs = append(codecs, records.Codec(raw[22]&7))
		pids = append(pids, int64(binary.BigEndian.Uint64(raw[43:])))
		raw = raw[size:]
	}
	return codecs, pids
}

// TestKgoProduceIntoConsumerGroup: a stock kgo producer (idempotent,
// snappy: kgo's defaults) writes 2,000 keyed records to events(4) while
// three kgo members of a group consume it. Every record reaches the group
// exactly once, each partition's records in offset order, keys and values
// intact; the members' commits, read back with kadm, are each
// partition's last offset + 1. A plain consumer, without a group, then
// reads all of them from the start.
func TestKgoProduceIntoConsumerGroup(t *testing.T) {
	t.Parallel()
	const n = 2000
	b := startBroker(t, kgoConfig(map[string]int32{"events": 4}))
	const group = "readers"
	var members []*kgo.Client
	var collectors []*kgoCollector
	for _, name := range []string{"a", "b", "c"} {
		cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.ClientID(name),
			kgo.ConsumerGroup(group), kgo.ConsumeTopics("events"), kgo.DisableAutoCommit(),
			kgo.SessionTimeout(10*time.Second), kgo.HeartbeatInterval(kgoHeartbeat), kgo.RebalanceTimeout(kgoRebalanceTimeout),
			kgo.FetchMaxWait(kgoFetchMaxWait), kgo.RetryBackoffFn(func(int) time.Duration { return kgoRetryBackoff }))
		require.NoError(t, err)
		members = append(members, cl)
		collectors = append(collectors, kgoCollect(t, cl))
	}
	// Settle the group before producing: a rebalance while records flow
	// would hand uncommitted records to another member, which is Kafka's
	// at-least-once, not what this test counts.
	testutil.Eventually(t, kgoWait, func() string {
		v := b.describe(group)
		if v.State != coordinator.Stable || len(v.Members) != 3 {
			return fmt.Sprintf("group %s with %d members", v.State, len(v.Members))
		}
		for i, cl := range members {
			if _, gen := cl.GroupMetadata(); gen != v.Generation {
				return fmt.Sprintf("member %d at generation %d, group at %d", i, gen, v.Generation)
			}
		}
		return ""
	})
	gen := b.describe(group).Generation
	// Errors so far are the group's settling: minibroker fences every
	// member at its next heartbeat after each join (no join barrier,
	// docs/behavior-matrix.md), and kgo reports that through its polls.
	settled := make([]int, len(collectors))
	for i, c := range collectors {
		_, errs := c.snapshot()
		settled[i] = len(errs)
	}

	produced := kgoProduceAll(t, b, "events", "value", n)
	require.Len(t, produced, 4, "the key hash spreads the records over every partition")
	testutil.Eventually(t, kgoWait, func() string {
		got := 0
		for _, c := range collectors {
			got += c.count()
		}
		if got < n {
			return fmt.Sprintf("%d of %d records consumed", got, n)
		}
		return ""
	})
	require.Equal(t, gen, b.describe(group).Generation, "no rebalance while records flowed")
	consumed := map[int32][]kgoRecord{}
	for i, c := range collectors {
		got, errs := c.snapshot()
		assert.Empty(t, errs[settled[i]:], "member %d's polls once the group settled", i)
		for p, rs := range got {
			require.Empty(t, consumed[p], "partition %d consumed by two members", p)
			consumed[p] = rs
		}
	}
	assert.Equal(t, produced, consumed, "every record exactly once, in offset order per partition")

	for _, cl := range members {
		ctx, cancel := context.WithTimeout(t.Context(), kgoWait)
		require.NoError(t, cl.CommitUncommittedOffsets(ctx))
		cancel()
	}
	ctx, cancel := context.WithTimeout(t.Context(), kgoWait)
	defer cancel()
	committed, err := b.admin(t).FetchOffsets(ctx, group)
	require.NoError(t, err)
	for p, rs := range produced {
		o, ok := committed.Lookup("events", p)
		require.True(t, ok, "partition %d committed", p)
		require.NoError(t, o.Err)
		assert.Equal(t, rs[len(rs)-1].Offset+1, o.At, "partition %d: last offset + 1", p)
	}

	for p := range int32(4) {
		codecs, pids := kgoStoredBatches(t, b, "events", p)
		assert.Contains(t, codecs, records.CodecSnappy, "partition %d: kgo compresses with snappy by default", p)
		for i, pid := range pids {
			assert.GreaterOrEqual(t, pid, int64(0), "partition %d batch %d: kgo is idempotent by default", p, i)
		}
	}

	plain, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.ClientID("plain"), kgo.ConsumeTopics("events"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(kgoFetchMaxWait))
	require.NoError(t, err)
	all := kgoCollect(t, plain)
	testutil.Eventually(t, kgoWait, func() string {
		if got := all.count(); got < n {
			return fmt.Sprintf("the plain consumer has %d of %d", got, n)
		}
		return ""
	})
	got, errs := all.snapshot()
	assert.Empty(t, errs)
	assert.Equal(t, produced, got, "a plain consumer reads everything from the start")
}

// TestKgoCompressionRoundTrips: for each codec kgo offers, a producer's
// compressed batches are stored as sent (the broker keeps the producer's
// codec) and a consumer reads every record back intact.
func TestKgoCompressionRoundTrips(t *testing.T) {
	t.Parallel()
	codecs := []struct {
		name  string
		kgo   kgo.CompressionCodec
		codec records.Codec
	}{
		{"gzip", kgo.GzipCompression(), records.CodecGzip},
		{"snappy", kgo.SnappyCompression(), records.CodecSnappy},
		{"lz4", kgo.Lz4Compression(), records.CodecLZ4},
		{"zstd", kgo.ZstdCompression(), records.CodecZstd},
	}
	topics := map[string]int32{}
	for _, c := range codecs {
		topics["codec-"+c.name] = 1
	}
	b := startBroker(t, kgoConfig(topics))
	for _, c := range codecs {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			topic := "codec-" + c.name
			prefix := strings.Repeat("compressible ", 8) // so that compression pays and kgo uses it
			produced := kgoProduceAll(t, b, topic, prefix, 300, kgo.ProducerBatchCompression(c.kgo))
			stored, _ := kgoStoredBatches(t, b, topic, 0)
			require.NotEmpty(t, stored)
			for i, got := range stored {
				assert.Equal(t, c.codec, got, "batch %d is stored with the producer's codec", i)
			}
			cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.ConsumeTopics(topic),
				kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(kgoFetchMaxWait))
			require.NoError(t, err)
			got := kgoCollect(t, cl)
			testutil.Eventually(t, kgoWait, func() string {
				if n := got.count(); n < 300 {
					return fmt.Sprintf("%d of 300 records", n)
				}
				return ""
			})
			recs, errs := got.snapshot()
			assert.Empty(t, errs)
			assert.Equal(t, produced, recs)
		})
	}
}

// TestKgoProducerCreatesTopicOnFirstWrite: a kgo producer with
// AllowAutoTopicCreation writes to a topic that does not exist: its
// Metadata request creates it with DefaultPartitions partitions, and the
// first write succeeds. A producer that does not allow creation, or a
// broker with NoAutoCreateTopics, leaves the topic missing, and the write
// fails with UNKNOWN_TOPIC_OR_PARTITION.
func TestKgoProducerCreatesTopicOnFirstWrite(t *testing.T) {
	t.Parallel()
	produceOne := func(t *testing.T, b *testBroker, topic string, opts ...kgo.Opt) error {
		t.Helper()
		cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(b.Addr()), kgo.UnknownTopicRetries(1),
			kgo.RetryBackoffFn(func(int) time.Duration { return kgoRetryBackoff })}, opts...)...)
		require.NoError(t, err)
		defer cl.Close()
		ctx, cancel := context.WithTimeout(t.Context(), kgoWait)
		defer cancel()
		return cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("first")}).FirstErr()
	}
	partitions := func(t *testing.T, b *testBroker, topic string) int {
		t.Helper()
		n, ok := b.Catalog().Partitions(topic)
		if !ok {
			return 0
		}
		return int(n)
	}

	on := startBroker(t, kgoConfig(nil), func(cfg *broker.Config) { cfg.DefaultPartitions = 3 })
	require.NoError(t, produceOne(t, on, "fresh", kgo.AllowAutoTopicCreation()))
	assert.Equal(t, 3, partitions(t, on, "fresh"), "created with DefaultPartitions")
	var total int64
	for p := range int32(3) {
		st, err := on.Log().PartitionStats("fresh", p)
		require.NoError(t, err)
		total += st.HighWatermark
	}
	assert.Equal(t, int64(1), total, "the first record is stored")

	err := produceOne(t, on, "not-allowed")
	require.ErrorIs(t, err, kerr.UnknownTopicOrPartition, "a producer that does not allow creation")
	assert.Zero(t, partitions(t, on, "not-allowed"))

	off := startBroker(t, kgoConfig(nil), func(cfg *broker.Config) { cfg.NoAutoCreateTopics = true })
	err = produceOne(t, off, "fresh", kgo.AllowAutoTopicCreation())
	require.ErrorIs(t, err, kerr.UnknownTopicOrPartition, "a broker with auto-creation off")
	assert.Zero(t, partitions(t, off, "fresh"))
}

// TestKgoFetchCorruptBatch: a kgo consumer reading a partition whose
// older segment had a byte of record data flipped while the broker was
// down gets every record before the damaged batch, then kerr.CorruptMessage
// for the partition (kgo retries the code; KeepRetryableFetchErrors shows
// it), never the damaged bytes: before the check, kgo stalled on "encoded
// crc ... does not match" with nothing said by the broker.
func TestKgoFetchCorruptBatch(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	small := func(cfg *broker.Config) { cfg.DataDir, cfg.SegmentBytes = dir, 4096 }
	b := startBroker(t, kgoConfig(map[string]int32{"events": 1}), small)
	produced := kgoProduceAll(t, b, "events", "v", 200, kgo.ProducerLinger(0), kgo.MaxBufferedRecords(1))
	require.Len(t, produced[0], 200)
	require.NoError(t, b.Close())

	segs, err := filepath.Glob(filepath.Join(dir, broker.LogsDir, "events-0", "*.log"))
	require.NoError(t, err)
	require.Greater(t, len(segs), 2)
	next, err := strconv.ParseInt(strings.TrimSuffix(filepath.Base(segs[1]), ".log"), 10, 64)
	require.NoError(t, err)
	data, err := os.ReadFile(segs[0])
	require.NoError(t, err)
	data[len(data)-1] ^= 0xff // record data of the segment's last batch
	require.NoError(t, os.WriteFile(segs[0], data, 0o644))

	b = startBroker(t, kgoConfig(map[string]int32{"events": 1}), small)
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.ClientID("reader"), kgo.ConsumeTopics("events"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(kgoFetchMaxWait), kgo.KeepRetryableFetchErrors())
	require.NoError(t, err)
	defer cl.Close()
	var got []kgoRecord
	ctx, cancel := context.WithTimeout(t.Context(), kgoWait)
	defer cancel()
	var fetchErr error
	for fetchErr == nil {
		fs := cl.PollFetches(ctx)
		require.NoError(t, ctx.Err(), "no error for the damaged batch; %d records read", len(got))
		fs.EachRecord(func(r *kgo.Record) { got = append(got, kgoRecord{r.Offset, string(r.Key), string(r.Value)}) })
		for _, fe := range fs.Errors() {
			fetchErr = fe.Err
		}
	}
	require.ErrorIs(t, fetchErr, kerr.CorruptMessage)
	last := int64(len(got))
	require.Less(t, last, next, "nothing at or past the damaged batch")
	require.Equal(t, produced[0][:last], got, "every record before the damaged batch, intact")
	require.GreaterOrEqual(t, b.Log().Stats().CorruptReads, int64(1))
}
