package integration

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/broker"
	"github.com/minibroker/minibroker/records"
	"github.com/minibroker/minibroker/testkit/wiretest"
	"github.com/minibroker/minibroker/wireclient"
)

// longPolls is a broker whose fetches may wait a minute, so that a test
// can tell a woken long poll from one that timed out.
func longPolls(cfg *broker.Config) { cfg.MaxFetchWait = time.Minute }

// asyncFetch sends req on its own connection and delivers the answer.
func asyncFetch(t *testing.T, b *testBroker, req *kmsg.FetchRequest) <-chan *kmsg.FetchResponse {
	t.Helper()
	c := wiretest.Dial(t, b.Addr(), "poll")
	done := make(chan *kmsg.FetchResponse, 1)
	go func() { // owns c
		resp, err := c.Request(t.Context(), req)
		if err != nil {
			t.Errorf("fetch: %v", err)
			close(done)
			return
		}
		done <- resp.(*kmsg.FetchResponse)
	}()
	return done
}

// waiters is how many long polls wait on topic-partition.
func waiters(t *testing.T, b *testBroker, topic string, partition int32) int {
	t.Helper()
	st, err := b.Log().PartitionStats(topic, partition)
	require.NoError(t, err)
	return st.Waiters
}

// requireWaiting fails if the fetch has answered.
func requireWaiting(t *testing.T, done <-chan *kmsg.FetchResponse, why string) {
	t.Helper()
	select {
	case resp := <-done:
		t.Fatalf("the fetch answered %v: %s", resp, why)
	default:
	}
}

// awaitFetch waits for the fetch's answer.
func awaitFetch(t *testing.T, done <-chan *kmsg.FetchResponse) *kmsg.FetchResponse {
	t.Helper()
	select {
	case resp, ok := <-done:
		require.True(t, ok, "the fetch failed")
		return resp
	case <-time.After(waitTimeout):
		t.Fatal("the fetch was not answered")
		return nil
	}
}

// TestWireFetchLongPollWokenByProduce: a fetch at the high watermark of
// the partitions it names waits; a produce to another partition does not
// end the wait, a produce to a partition it names does, at once (well
// before its minute of MaxWait), with the new records.
func TestWireFetchLongPollWokenByProduce(t *testing.T) {
	t.Parallel()
	b := startBroker(t, longPolls)
	c := wiretest.Dial(t, b.Addr(), "producer")
	start := time.Now()
	done := asyncFetch(t, b, fetchRequest(12, time.Minute, fetchAt{"orders", 0, 0}, fetchAt{"orders", 2, 0}))
	eventually(t, func() bool { return waiters(t, b, "orders", 0) == 1 && waiters(t, b, "orders", 2) == 1 }, "the fetch waits on both partitions")

	produceValues(t, c, "orders", 1, "elsewhere")
	produceValues(t, c, "orders", 1, "elsewhere again") // its round ends after the first one's wake-ups
	produceValues(t, c, "payments", 0, "another topic")
	requireWaiting(t, done, "a produce to a partition it does not name woke it")
	assert.Equal(t, 1, waiters(t, b, "orders", 2))

	produceValues(t, c, "orders", 2, "x")
	resp := awaitFetch(t, done)
	assert.Less(t, time.Since(start), waitTimeout, "woken, not timed out")
	ps := resp.Topics[0].Partitions
	require.Len(t, ps, 2)
	assert.Empty(t, ps[0].RecordBatches)
	assert.Equal(t, int64(0), ps[0].HighWatermark)
	assert.Equal(t, []string{"0:x"}, decodedValues(t, ps[1].RecordBatches))
	assert.Equal(t, int64(1), ps[1].HighWatermark)
	eventually(t, func() bool { return waiters(t, b, "orders", 0) == 0 && waiters(t, b, "orders", 2) == 0 }, "an answered fetch leaves no waiter")
}

// TestWireFetchMinBytes: a long poll answers once it has MinBytes of
// records, not at the first record: one batch of a two-batch MinBytes
// leaves it waiting, the second answers it with both. When MaxWait
// passes first, it answers with what there is.
func TestWireFetchMinBytes(t *testing.T) {
	t.Parallel()
	b := startBroker(t, longPolls)
	c := wiretest.Dial(t, b.Addr(), "producer")
	one := len(valuesBatch("a"))
	req := fetchRequest(12, time.Minute, fetchAt{"orders", 0, 0})
	req.MinBytes = int32(2 * one)
	done := asyncFetch(t, b, req)
	eventually(t, func() bool { return waiters(t, b, "orders", 0) == 1 }, "the fetch waits")
	produceValues(t, c, "orders", 0, "a")
	produceValues(t, c, "orders", 3, "elsewhere") // a round after the first one's wake-ups
	eventually(t, func() bool { return waiters(t, b, "orders", 0) == 1 }, "the fetch waits again, past the first batch")
	requireWaiting(t, done, "one batch is less than MinBytes")

	produceValues(t, c, "orders", 0, "b")
	resp := awaitFetch(t, done)
	assert.Equal(t, []string{"0:a", "1:b"}, decodedValues(t, resp.Topics[0].Partitions[0].RecordBatches))

	req = fetchRequest(12, 100*time.Millisecond, fetchAt{"orders", 0, 0})
	req.MinBytes = 1 << 20
	start := time.Now()
	p := fetchPartitions(t, c, req)["orders-0"]
	assert.GreaterOrEqual(t, time.Since(start), 100*time.Millisecond, "waits its MaxWait for MinBytes")
	assert.Equal(t, []string{"0:a", "1:b"}, decodedValues(t, p.RecordBatches), "then answers what there is")
}

// TestWireFetchByteLimits: answers hold whole stored batches, byte for
// byte as produced (base offsets assigned), from the one holding the
// fetch offset; MaxBytes bounds the answer and PartitionMaxBytes each
// partition, except that the first partition with records gets one whole
// batch however large (KIP-74). --max-fetch-bytes caps MaxBytes.
func TestWireFetchByteLimits(t *testing.T) {
	t.Parallel()
	const size = 500
	produceThree := func(t *testing.T, c *wireclient.Client) [][]byte {
		var batches [][]byte
		for i := range int64(3) {
			batch := batchOfSize(t, size)
			for _, p := range []int32{0, 1} {
				a := produceOne(t, c, produceRequest(9, -1, "orders", partBatch{p, batch}))
				require.Equal(t, codeNone, a.ErrorCode)
				require.Equal(t, i, a.BaseOffset)
			}
			batches = append(batches, stampOffset(batch, i))
		}
		return batches
	}
	cat := func(bs ...[]byte) []byte {
		var out []byte
		for _, b := range bs {
			out = append(out, b...)
		}
		return out
	}

	b := startBroker(t)
	c := wiretest.Dial(t, b.Addr(), "c")
	stored := produceThree(t, c)
	tests := []struct {
		name                string
		maxBytes, partBytes int32
		want0, want1        []byte
	}{
		{"everything fits", 1 << 20, 1 << 20, cat(stored...), cat(stored...)},
		{"MaxBytes holds two batches", 2*size + 10, 1 << 20, cat(stored[:2]...), nil},
		{"PartitionMaxBytes holds one batch each", 1 << 20, size + 1, stored[0], stored[0]},
		{"PartitionMaxBytes below a batch: the first partition gets one", 1 << 20, 10, stored[0], nil},
		{"MaxBytes below a batch: the first partition gets one", 10, 1 << 20, stored[0], nil},
	}
	for _, tc := range tests {
		req := fetchRequest(12, 0, fetchAt{"orders", 0, 0}, fetchAt{"orders", 1, 0})
		req.MaxBytes = tc.maxBytes
		for i := range req.Topics[0].Partitions {
			req.Topics[0].Partitions[i].PartitionMaxBytes = tc.partBytes
		}
		ps := fetchPartitions(t, c, req)
		assert.Equal(t, tc.want0, nilIfEmpty(ps["orders-0"].RecordBatches), "%s: orders-0", tc.name)
		assert.Equal(t, tc.want1, nilIfEmpty(ps["orders-1"].RecordBatches), "%s: orders-1", tc.name)
		assert.Equal(t, int64(3), ps["orders-1"].HighWatermark, "%s: offsets are answered without records", tc.name)
	}

	// A fetch from inside a batch gets the whole batch; the client skips
	// the records before its offset.
	require.Equal(t, int64(0), produceValues(t, c, "orders", 2, "a", "b", "c"))
	p := fetchPartitions(t, c, fetchRequest(12, 0, fetchAt{"orders", 2, 1}))["orders-2"]
	assert.Equal(t, []string{"0:a", "1:b", "2:c"}, decodedValues(t, p.RecordBatches))

	capped := startBroker(t, func(cfg *broker.Config) { cfg.MaxFetchBytes = 2*size + 10 })
	c = wiretest.Dial(t, capped.Addr(), "c")
	stored = produceThree(t, c)
	ps := fetchPartitions(t, c, fetchRequest(12, 0, fetchAt{"orders", 0, 0}))
	assert.Equal(t, cat(stored[:2]...), ps["orders-0"].RecordBatches, "--max-fetch-bytes caps a larger MaxBytes")
}

func nilIfEmpty(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	return b
}

// TestWireFetchOffsetsAndRetention: with 1 KiB segments of two 500-byte
// batches and 2000 bytes retained, seven batches leave offsets 2-6: the
// log start offset is 2 and the high watermark 7 (also the last stable
// offset: there are no transactions), in every answer. A fetch below the
// log start or past the high watermark is OFFSET_OUT_OF_RANGE with those
// offsets, at once; one at the log start reads from it, one at the high
// watermark answers nothing.
func TestWireFetchOffsetsAndRetention(t *testing.T) {
	t.Parallel()
	b := startBroker(t, longPolls, func(cfg *broker.Config) { cfg.SegmentBytes, cfg.RetentionBytes = 1024, 2000 })
	c := wiretest.Dial(t, b.Addr(), "c")
	// The answer carries the log start as the batch found it: retention
	// runs once the batch is durable, so the sixth batch's deletion shows
	// in the seventh's answer.
	for i, start := range []int64{0, 0, 0, 0, 0, 0, 2} {
		a := produceOne(t, c, produceRequest(9, -1, "payments", partBatch{0, batchOfSize(t, 500)}))
		require.Equal(t, codeNone, a.ErrorCode)
		require.Equal(t, int64(i), a.BaseOffset)
		require.Equal(t, start, a.LogStartOffset, "batch %d", i)
	}
	st, err := b.Log().PartitionStats("payments", 0)
	require.NoError(t, err)
	require.Equal(t, 3, st.Segments, "the oldest segment is deleted: [2 3] [4 5] [6] are left")

	for _, tc := range []struct {
		offset int64
		code   int16
		first  int64 // offset of the first record returned; -1 none
	}{
		{0, codeOffsetOutOfRange, -1},
		{1, codeOffsetOutOfRange, -1},
		{2, codeNone, 2},
		{5, codeNone, 5},
		{6, codeNone, 6},
		{7, codeNone, -1},
		{8, codeOffsetOutOfRange, -1},
	} {
		wait := time.Minute // only a fetch at the high watermark waits
		if tc.offset == 7 {
			wait = 50 * time.Millisecond
		}
		start := time.Now()
		p := fetchPartitions(t, c, fetchRequest(12, wait, fetchAt{"payments", 0, tc.offset}))["payments-0"]
		assert.Less(t, time.Since(start), waitTimeout, "offset %d answers at once", tc.offset)
		assert.Equal(t, tc.code, p.ErrorCode, "offset %d", tc.offset)
		assert.Equal(t, int64(2), p.LogStartOffset, "offset %d", tc.offset)
		assert.Equal(t, int64(7), p.HighWatermark, "offset %d", tc.offset)
		assert.Equal(t, int64(7), p.LastStableOffset, "offset %d", tc.offset)
		if tc.first < 0 {
			assert.Empty(t, p.RecordBatches, "offset %d", tc.offset)
			continue
		}
		recs, err := records.Decode(p.RecordBatches)
		require.NoError(t, err)
		require.NotEmpty(t, recs)
		assert.Equal(t, tc.first, recs[0].Offset, "offset %d", tc.offset)
		assert.Equal(t, int64(6), recs[len(recs)-1].Offset, "offset %d: up to the high watermark", tc.offset)
	}
}

// TestWireFetchSessionsAndUnknownPartitions: a request that asks for a
// fetch session (v7+, session epoch 0) gets session id 0: there are
// none, and clients then send full requests. An unknown topic or
// partition is UNKNOWN_TOPIC_OR_PARTITION with offsets -1 and answers at
// once, with the other partitions' records. A partition with nothing to
// give has an empty records field, not a null one (librdkafka fails the
// whole answer on a null: "invalid MessageSetSize -1").
func TestWireFetchSessionsAndUnknownPartitions(t *testing.T) {
	t.Parallel()
	b := startBroker(t, longPolls)
	c := wiretest.Dial(t, b.Addr(), "c")
	produceValues(t, c, "orders", 0, "a")
	req := fetchRequest(12, time.Minute, fetchAt{"orders", 0, 0}, fetchAt{"orders", 1, 0}, fetchAt{"orders", 4, 0}, fetchAt{"nope", 0, 0})
	req.SessionID, req.SessionEpoch = 0, 0
	start := time.Now()
	resp := wiretest.Do[*kmsg.FetchResponse](t, c, req)
	assert.Less(t, time.Since(start), waitTimeout)
	assert.Equal(t, codeNone, resp.ErrorCode)
	assert.Equal(t, int32(0), resp.SessionID, "no session was created")
	ps := map[string]kmsg.FetchResponseTopicPartition{}
	for _, rt := range resp.Topics {
		for _, p := range rt.Partitions {
			ps[fmt.Sprintf("%s-%d", rt.Topic, p.Partition)] = p
		}
	}
	assert.Equal(t, []string{"0:a"}, decodedValues(t, ps["orders-0"].RecordBatches))
	for _, name := range []string{"orders-1", "orders-4", "nope-0"} {
		assert.Equal(t, []byte{}, ps[name].RecordBatches, "%s: empty, not null", name)
	}
	for _, name := range []string{"orders-4", "nope-0"} {
		assert.Equal(t, codeUnknownTopicOrPartition, ps[name].ErrorCode, name)
		assert.Equal(t, int64(-1), ps[name].HighWatermark, name)
		assert.Equal(t, int64(-1), ps[name].LogStartOffset, name)
	}
}

// TestWireFetchIgnoresLeaderEpochs: the current leader epoch a fetch
// (v9+) carries is not checked: there is one leader, at epoch 0 in
// Metadata, that never changes, so an epoch ahead of it is served as if
// it were current (Kafka answers UNKNOWN_LEADER_EPOCH, and
// FENCED_LEADER_EPOCH for one behind). The partition leader epoch of a
// stored batch is the producer's (-1 from kgo and EncodeBatch), not the
// leader's.
func TestWireFetchIgnoresLeaderEpochs(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	c := wiretest.Dial(t, b.Addr(), "c")
	produceValues(t, c, "orders", 0, "a")
	md := wiretest.Do[*kmsg.MetadataResponse](t, c, metadataRequest(12, []string{"orders"}))
	require.Equal(t, int32(0), md.Topics[0].Partitions[0].LeaderEpoch)
	for _, epoch := range []int32{-1, 0, 7} {
		req := fetchRequest(12, 0, fetchAt{"orders", 0, 0})
		req.Topics[0].Partitions[0].CurrentLeaderEpoch = epoch
		p := fetchPartitions(t, c, req)["orders-0"]
		assert.Equal(t, codeNone, p.ErrorCode, "current leader epoch %d", epoch)
		assert.Equal(t, []string{"0:a"}, decodedValues(t, p.RecordBatches), "current leader epoch %d", epoch)
		require.GreaterOrEqual(t, len(p.RecordBatches), 16)
		assert.Equal(t, int32(-1), int32(binary.BigEndian.Uint32(p.RecordBatches[12:])), "the batch's partition leader epoch is kept as sent")
	}
}

// TestWireFetchCorruptBatch: a byte flipped in the record data of an
// older segment while the broker is down passes start-up (older segments
// are walked by batch headers), and a Fetch that reaches that batch is
// answered CORRUPT_MESSAGE for the partition, as Kafka answers a
// CorruptRecordException from its log, instead of bytes whose CRC a
// client then refuses. The batches before it are served; the other
// partitions of the same Fetch are unaffected.
func TestWireFetchCorruptBatch(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	small := func(cfg *broker.Config) { cfg.DataDir, cfg.SegmentBytes = dir, 1024 }
	first := startBroker(t, small)
	c := wiretest.Dial(t, first.Addr(), "c")
	for i := range 30 {
		produceValues(t, c, "payments", 0, fmt.Sprintf("value-%02d-%s", i, strings.Repeat("x", 60)))
	}
	produceValues(t, c, "orders", 0, "bystander")
	require.NoError(t, first.Close())

	segs, err := filepath.Glob(filepath.Join(dir, broker.LogsDir, "payments-0", "*.log"))
	require.NoError(t, err)
	require.Greater(t, len(segs), 2)
	second, err := strconv.ParseInt(strings.TrimSuffix(filepath.Base(segs[1]), ".log"), 10, 64)
	require.NoError(t, err)
	data, err := os.ReadFile(segs[0])
	require.NoError(t, err)
	data[len(data)-1] ^= 0xff // the last record's value, in the batch at offset second-1
	require.NoError(t, os.WriteFile(segs[0], data, 0o644))

	b := startBroker(t, func(cfg *broker.Config) { small(cfg) })
	c = wiretest.Dial(t, b.Addr(), "c")
	got := fetchPartitions(t, c, fetchRequest(11, 0, fetchAt{"payments", 0, 0}))["payments-0"]
	require.Equal(t, codeNone, got.ErrorCode)
	values := decodedValues(t, got.RecordBatches)
	require.Len(t, values, int(second-1), "every batch before the damaged one")

	parts := fetchPartitions(t, c, fetchRequest(11, 0, fetchAt{"orders", 0, 0}, fetchAt{"payments", 0, second - 1}))
	bad := parts["payments-0"]
	require.Equal(t, codeCorruptMessage, bad.ErrorCode)
	require.Empty(t, bad.RecordBatches)
	require.Equal(t, int64(30), bad.HighWatermark)
	assert.Equal(t, []string{"0:bystander"}, decodedValues(t, parts["orders-0"].RecordBatches))
	require.Equal(t, int64(1), b.Log().Stats().CorruptReads)
	lines := b.Logs.Find("corrupt batch in the log; reads of it fail with CORRUPT_MESSAGE")
	require.Len(t, lines, 1)
	assert.Equal(t, segs[0], lines[0].Attrs["file"])
}
