package server

import (
	"bytes"
	"context"
	"encoding/binary"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/records"
	"github.com/minibroker/minibroker/wireclient"
)

// fetchRequest fetches partitions of topic from offset, waiting up to
// maxWait for a first byte.
func fetchRequest(version int16, maxWait time.Duration, topic string, offset int64, partitions ...int32) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.Version, req.MaxWaitMillis, req.MinBytes, req.MaxBytes = version, int32(maxWait/time.Millisecond), 1, 1<<20
	ft := kmsg.FetchRequestTopic{Topic: topic}
	for _, p := range partitions {
		fp := kmsg.NewFetchRequestTopicPartition()
		fp.Partition, fp.FetchOffset, fp.PartitionMaxBytes = p, offset, 1<<20
		ft.Partitions = append(ft.Partitions, fp)
	}
	req.Topics = []kmsg.FetchRequestTopic{ft}
	return req
}

// batch is an uncompressed batch of values, timestamped now.
func batch(values ...string) []byte {
	spec := records.BatchSpec{FirstTimestamp: time.Now().UnixMilli()}
	for _, v := range values {
		spec.Records = append(spec.Records, records.Record{Value: []byte(v)})
	}
	return records.EncodeBatch(spec)
}

// produceRequest produces one batch to each partition given, acks -1.
func produceRequest(version int16, topic string, batches map[int32][]byte) *kmsg.ProduceRequest {
	req := kmsg.NewPtrProduceRequest()
	req.Version, req.Acks, req.TimeoutMillis = version, -1, 5000
	pt := kmsg.ProduceRequestTopic{Topic: topic}
	for p := range int32(16) {
		if b, ok := batches[p]; ok {
			pt.Partitions = append(pt.Partitions, kmsg.ProduceRequestTopicPartition{Partition: p, Records: b})
		}
	}
	req.Topics = []kmsg.ProduceRequestTopic{pt}
	return req
}

// produce appends values to topic's partition and requires success.
func (e *env) produce(topic string, partition int32, values ...string) int64 {
	e.t.Helper()
	resp := call[*kmsg.ProduceResponse](e, "p", produceRequest(9, topic, map[int32][]byte{partition: batch(values...)}))
	p := resp.Topics[0].Partitions[0]
	require.Zero(e.t, p.ErrorCode, "produce to %s-%d", topic, partition)
	return p.BaseOffset
}

// values decodes a fetched partition's records into their offsets and
// values, "offset:value".
func values(t *testing.T, raw []byte) []string {
	t.Helper()
	recs, err := records.Decode(raw)
	require.NoError(t, err)
	out := []string{}
	for _, r := range recs {
		out = append(out, strconv.FormatInt(r.Offset, 10)+":"+string(r.Value))
	}
	return out
}

func TestFetchReadsWhatWasProduced(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	require.Equal(t, int64(0), e.produce("orders", 1, "a", "b"))
	require.Equal(t, int64(2), e.produce("orders", 1, "c"))
	resp := call[*kmsg.FetchResponse](e, "c", fetchRequest(12, 0, "orders", 1, 1))
	assert.Zero(t, resp.SessionID, "no fetch sessions")
	p := resp.Topics[0].Partitions[0]
	require.Zero(t, p.ErrorCode)
	assert.Equal(t, int64(3), p.HighWatermark)
	assert.Equal(t, int64(3), p.LastStableOffset)
	assert.Equal(t, int64(0), p.LogStartOffset)
	assert.Equal(t, []string{"0:a", "1:b", "2:c"}, values(t, p.RecordBatches),
		"whole batches from the one holding offset 1: the client skips offset 0")

	resp = call[*kmsg.FetchResponse](e, "c", fetchRequest(12, 0, "orders", 3, 1))
	p = resp.Topics[0].Partitions[0]
	assert.Zero(t, p.ErrorCode, "the high watermark itself is in range")
	assert.Empty(t, p.RecordBatches)
	resp = call[*kmsg.FetchResponse](e, "c", fetchRequest(12, 0, "orders", 4, 1))
	p = resp.Topics[0].Partitions[0]
	assert.Equal(t, kerr.OffsetOutOfRange.Code, p.ErrorCode)
	assert.Equal(t, int64(3), p.HighWatermark)
}

// TestFetchLongPollWokenByProduce: a fetch at the high watermark waits, and
// a produce to a partition it names ends the wait with the new records.
func TestFetchLongPollWokenByProduce(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	done := make(chan *kmsg.FetchResponse, 1)
	start := time.Now()
	go func() { done <- call[*kmsg.FetchResponse](e, "c", fetchRequest(12, time.Minute, "orders", 0, 0, 2)) }()
	eventually(t, testTimeout, func() bool { return stackHas("(*Server).handleFetch") }, "the fetch waits")
	e.produce("orders", 1, "elsewhere") // not a partition it named
	e.produce("orders", 2, "x")
	select {
	case resp := <-done:
		assert.Less(t, time.Since(start), 30*time.Second, "woken, not timed out")
		ps := resp.Topics[0].Partitions
		assert.Empty(t, ps[0].RecordBatches)
		assert.Equal(t, []string{"0:x"}, values(t, ps[1].RecordBatches))
	case <-time.After(testTimeout):
		t.Fatal("the produce did not wake the fetch")
	}
}

// TestFetchByteLimits: MaxBytes and PartitionMaxBytes bound the answer in
// whole batches, except that the first partition with data gets one batch
// however large (KIP-74).
func TestFetchByteLimits(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	big := string(make([]byte, 3000))
	for range 3 {
		e.produce("orders", 0, big)
		e.produce("orders", 1, big)
	}
	one := len(batch(big))
	req := fetchRequest(12, 0, "orders", 0, 0, 1)
	req.MaxBytes = int32(one + 10)
	req.Topics[0].Partitions[0].PartitionMaxBytes = 100 // smaller than any batch
	resp := call[*kmsg.FetchResponse](e, "c", req)
	ps := resp.Topics[0].Partitions
	assert.Len(t, ps[0].RecordBatches, one, "one whole batch despite the partition limit: the first with data")
	assert.Empty(t, ps[1].RecordBatches, "no room left under MaxBytes")
	assert.Equal(t, int64(3), ps[1].HighWatermark, "but its offsets are answered")

	req = fetchRequest(12, 0, "orders", 0, 0)
	req.Topics[0].Partitions[0].PartitionMaxBytes = int32(2*one + 1)
	resp = call[*kmsg.FetchResponse](e, "c", req)
	assert.Len(t, resp.Topics[0].Partitions[0].RecordBatches, 2*one, "two whole batches fit, the third does not")
}

func TestFetchWaitsAndAnswersEmpty(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	start := time.Now()
	resp := call[*kmsg.FetchResponse](e, "c", fetchRequest(12, 30*time.Millisecond, "orders", 0, 0, 3))
	assert.GreaterOrEqual(t, time.Since(start), 30*time.Millisecond, "waits its MaxWait")
	require.Len(t, resp.Topics[0].Partitions, 2)
	for _, p := range resp.Topics[0].Partitions {
		assert.Zero(t, p.ErrorCode)
		assert.Equal(t, int64(0), p.HighWatermark)
		assert.Empty(t, p.RecordBatches)
	}
}

func TestFetchUnknownPartitionDoesNotWait(t *testing.T) {
	t.Parallel()
	e := newEnvWith(t, envOptions{config: func(cfg *Config) { cfg.MaxFetchWait = time.Minute }})
	start := time.Now()
	resp := call[*kmsg.FetchResponse](e, "c", fetchRequest(4, time.Minute, "orders", 0, 0, 4))
	assert.Less(t, time.Since(start), 10*time.Second)
	ps := resp.Topics[0].Partitions
	assert.Zero(t, ps[0].ErrorCode)
	assert.Equal(t, kerr.UnknownTopicOrPartition.Code, ps[1].ErrorCode)
	assert.Equal(t, int64(-1), ps[1].HighWatermark)
	resp = call[*kmsg.FetchResponse](e, "c", fetchRequest(4, time.Minute, "nope", 0, 0))
	assert.Equal(t, kerr.UnknownTopicOrPartition.Code, resp.Topics[0].Partitions[0].ErrorCode)
}

func TestFetchWaitIsCapped(t *testing.T) {
	t.Parallel()
	e := newEnvWith(t, envOptions{config: func(cfg *Config) { cfg.MaxFetchWait = 20 * time.Millisecond }})
	start := time.Now()
	call[*kmsg.FetchResponse](e, "c", fetchRequest(12, time.Minute, "orders", 0, 0))
	elapsed := time.Since(start)
	assert.GreaterOrEqual(t, elapsed, 20*time.Millisecond)
	assert.Less(t, elapsed, 10*time.Second, "MaxFetchWait caps MaxWaitMillis")

	start = time.Now()
	req := fetchRequest(12, 0, "orders", 0, 0)
	req.MaxWaitMillis = -5
	call[*kmsg.FetchResponse](e, "c", req)
	assert.Less(t, time.Since(start), 10*time.Second, "a negative wait is none")
}

func TestFetchEndsOnShutdown(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx, cancel := context.WithCancel(t.Context())
	r := e.req("c", 12)
	r.ctx = ctx
	done := make(chan kmsg.Response, 1)
	go func() { done <- e.srv.handleFetch(r, fetchRequest(12, time.Minute, "orders", 0, 0)) }()
	cancel()
	select {
	case resp := <-done:
		assert.Zero(t, resp.(*kmsg.FetchResponse).Topics[0].Partitions[0].ErrorCode)
	case <-time.After(testTimeout):
		t.Fatal("fetch kept waiting after shutdown")
	}
}

// TestFetchWaitsForMinBytes: a long poll woken by a produce that brings
// less than MinBytes reads again and keeps waiting; the produce that
// completes MinBytes answers it with everything.
func TestFetchWaitsForMinBytes(t *testing.T) {
	t.Parallel()
	e := newEnvWith(t, envOptions{config: func(cfg *Config) { cfg.MaxFetchWait = time.Minute }})
	req := fetchRequest(12, time.Minute, "orders", 0, 0)
	req.MinBytes = int32(2 * len(batch("a")))
	done := make(chan *kmsg.FetchResponse, 1)
	go func() { done <- call[*kmsg.FetchResponse](e, "c", req) }()
	waiting := func() bool {
		st, err := e.log.PartitionStats("orders", 0)
		require.NoError(t, err)
		return st.Waiters == 1
	}
	eventually(t, testTimeout, waiting, "the fetch waits")
	e.produce("orders", 0, "a")
	e.produce("orders", 1, "elsewhere") // its round ends after the first one's wake-up
	eventually(t, testTimeout, waiting, "the fetch waits again, past the first batch")
	select {
	case resp := <-done:
		t.Fatalf("answered with less than MinBytes: %v", resp)
	default:
	}
	e.produce("orders", 0, "b")
	select {
	case resp := <-done:
		assert.Equal(t, []string{"0:a", "1:b"}, values(t, resp.Topics[0].Partitions[0].RecordBatches))
	case <-time.After(testTimeout):
		t.Fatal("MinBytes reached, but the fetch was not answered")
	}
}

// BenchmarkFetch reads four partitions of 16 MiB each, in memory, over a
// socket: each Fetch asks for up to 1 MiB of each partition from the
// offset the last one ended at, as a consumer catching up does. MB/s
// counts record bytes answered.
func BenchmarkFetch(b *testing.B) {
	addr, log := benchServer(b, 4)
	raw := benchBatch(64 << 10)
	for p := range int32(4) {
		for range (16 << 20) / len(raw) {
			batch, err := log.Validate(bytes.Clone(raw))
			require.NoError(b, err)
			pd, err := log.Append("bench", p, batch)
			require.NoError(b, err)
			_, err = pd.Wait()
			require.NoError(b, err)
		}
	}
	c, err := wireclient.Dial(b.Context(), addr, "bench")
	require.NoError(b, err)
	defer c.Close()
	next := make([]int64, 4)
	var answered int64
	b.ReportAllocs()
	for b.Loop() {
		req := fetchRequest(12, 0, "bench", 0, 0, 1, 2, 3)
		req.MaxBytes = 50 << 20
		for i := range req.Topics[0].Partitions {
			req.Topics[0].Partitions[i].FetchOffset = next[i]
		}
		resp, err := c.Request(b.Context(), req)
		require.NoError(b, err)
		for i, p := range resp.(*kmsg.FetchResponse).Topics[0].Partitions {
			require.Zero(b, p.ErrorCode)
			answered += int64(len(p.RecordBatches))
			next[i] = lastOffset(p.RecordBatches) + 1
			if next[i] >= p.HighWatermark {
				next[i] = 0
			}
		}
	}
	b.ReportMetric(float64(answered)/b.Elapsed().Seconds()/1e6, "MB/s")
}

// lastOffset returns the offset of the last record of whole batches.
func lastOffset(raw []byte) int64 {
	last := int64(-1)
	for len(raw) >= 61 {
		size := int(binary.BigEndian.Uint32(raw[8:])) + 12
		last = int64(binary.BigEndian.Uint64(raw)) + int64(binary.BigEndian.Uint32(raw[23:]))
		raw = raw[size:]
	}
	return last
}
