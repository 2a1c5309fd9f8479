package integration

import (
	"encoding/binary"
	"fmt"
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

// codeInvalidTimestamp is INVALID_TIMESTAMP.
const codeInvalidTimestamp int16 = 32

// wireMaxMessageBytes is the --max-message-bytes of the produce tests'
// broker: small, so that a batch over it is cheap to build. Records
// decompressed past 64 times it (128 KiB) are refused too.
const wireMaxMessageBytes = 2048

// TestWireProduceRejectsBadBatches sends, for each rule of docs/design.md
// section 8, a batch that breaks only that rule to orders-1, beside a
// good batch to orders-0 in the same request, all on one connection. The
// bad batch gets Kafka's code for the rule, base offset -1 and (v8+) a
// message; the good one is stored at the next offset. At the end
// orders-1 holds nothing of the bad batches, orders-0 holds every good
// one in order, and the same connection still produces to orders-1 at
// offset 0.
func TestWireProduceRejectsBadBatches(t *testing.T) {
	t.Parallel()
	b := startBroker(t, func(cfg *broker.Config) { cfg.MaxMessageBytes = wireMaxMessageBytes })
	c := wiretest.Dial(t, b.Addr(), "c")
	good := valuesBatch("a", "b")
	now := time.Now().UnixMilli()
	tests := []struct {
		name    string
		version int16
		batch   []byte
		code    int16
	}{
		{"bad CRC", 9, func() []byte { b := valuesBatch("a"); b[len(b)-1] ^= 0xff; return b }(), codeCorruptMessage},
		{"magic 0", 9, edited(good, func(b []byte) { b[batchOffMagic] = 0 }), codeInvalidRecord},
		{"magic 1", 9, edited(good, func(b []byte) { b[batchOffMagic] = 1 }), codeInvalidRecord},
		{"record count above the records", 9, craftedBatch([]int32{0, 1}, 3, 2), codeInvalidRecord},
		{"record count below the records", 9, craftedBatch([]int32{0, 1, 2}, 2, 1), codeInvalidRecord},
		{"last offset delta disagrees with the count", 9, craftedBatch([]int32{0, 1}, 2, 5), codeInvalidRecord},
		{"offset deltas with a gap", 9, craftedBatch([]int32{0, 2}, 2, 1), codeInvalidRecord},
		{"offset deltas repeated", 9, craftedBatch([]int32{0, 0}, 2, 1), codeInvalidRecord},
		{"two batches", 9, append(valuesBatch("a"), valuesBatch("b")...), codeInvalidRecord},
		{"no batch", 9, []byte{}, codeInvalidRecord},
		{"a batch cut short", 9, good[:len(good)-3], codeInvalidRecord},
		{"base offset not 0", 9, edited(good, func(b []byte) { binary.BigEndian.PutUint64(b, 5) }), codeInvalidRecord},
		{"unknown codec 5", 9, edited(good, func(b []byte) { b[batchOffAttributes+1] |= 5 }), codeCorruptMessage},
		{"unknown codec 7", 9, edited(good, func(b []byte) { b[batchOffAttributes+1] |= 7 }), codeCorruptMessage},
		{"zstd before v7", 6, zstdBatch(t, "z"), codeUnsupportedCompressionType},
		{"over max message bytes", 9, batchOfSize(t, wireMaxMessageBytes+1), codeMessageTooLarge},
		{"decompresses past 64 x max message bytes", 9, zstdBatch(t, string(make([]byte, 200<<10))), codeMessageTooLarge},
		{"control batch", 9, edited(good, func(b []byte) { b[batchOffAttributes+1] |= 0x20 }), codeInvalidRecord},
		{"transactional batch without a producer id", 9, edited(good, func(b []byte) { b[batchOffAttributes+1] |= 0x10 }), codeInvalidRecord},
		{"log append time", 9, edited(good, func(b []byte) { b[batchOffAttributes+1] |= 0x08 }), codeInvalidTimestamp},
		{"timestamp two hours ahead", 9, timedBatch(now+2*time.Hour.Milliseconds(), []int64{0}, "late"), codeInvalidTimestamp},
		{"max timestamp above the records'", 9, edited(good, func(b []byte) {
			binary.BigEndian.PutUint64(b[35:], binary.BigEndian.Uint64(b[35:])+1)
		}), codeInvalidRecord},
	}
	var stored []string
	for i, tc := range tests {
		value := fmt.Sprintf("ok-%d", i)
		req := produceRequest(tc.version, -1, "orders", partBatch{0, valuesBatch(value)}, partBatch{1, tc.batch})
		a := produceAnswers(t, c, req)
		assert.Equal(t, codeNone, a[0].ErrorCode, "%s: the good partition", tc.name)
		assert.Equal(t, int64(i), a[0].BaseOffset, "%s: the good partition", tc.name)
		stored = append(stored, fmt.Sprintf("%d:%s", i, value))
		assert.Equal(t, tc.code, a[1].ErrorCode, "%s", tc.name)
		assert.Equal(t, int64(-1), a[1].BaseOffset, "%s", tc.name)
		if tc.version >= 8 {
			assert.NotNil(t, a[1].ErrorMessage, "%s: v8+ says why", tc.name)
		}
	}

	ps := fetchPartitions(t, c, fetchRequest(12, 0, fetchAt{"orders", 0, 0}, fetchAt{"orders", 1, 0}))
	assert.Equal(t, stored, decodedValues(t, ps["orders-0"].RecordBatches), "every good batch, in order")
	assert.Equal(t, int64(len(tests)), ps["orders-0"].HighWatermark)
	assert.Equal(t, int64(0), ps["orders-1"].HighWatermark, "no bad batch stored anything")
	assert.Empty(t, ps["orders-1"].RecordBatches)
	assert.Equal(t, int64(0), listOffset(t, c, 7, "orders", 1, -1).Offset)

	a := produceOne(t, c, produceRequest(9, -1, "orders", partBatch{1, valuesBatch("after")}))
	assert.Equal(t, codeNone, a.ErrorCode, "the connection still produces")
	assert.Equal(t, int64(0), a.BaseOffset)
}

// TestWireProduceAcceptsAtTheLimits: a batch of exactly
// --max-message-bytes, and zstd at Produce v7, are stored, and read back
// byte for byte (zstd as the producer compressed it).
func TestWireProduceAcceptsAtTheLimits(t *testing.T) {
	t.Parallel()
	b := startBroker(t, func(cfg *broker.Config) { cfg.MaxMessageBytes = wireMaxMessageBytes })
	c := wiretest.Dial(t, b.Addr(), "c")
	exact := batchOfSize(t, wireMaxMessageBytes)
	z := zstdBatch(t, "z1", "z2")
	for i, batch := range [][]byte{exact, z} {
		a := produceOne(t, c, produceRequest(7, -1, "payments", partBatch{0, batch}))
		require.Equal(t, codeNone, a.ErrorCode, "batch %d", i)
	}
	p := fetchPartitions(t, c, fetchRequest(12, 0, fetchAt{"payments", 0, 0}))["payments-0"]
	want := append(stampOffset(exact, 0), stampOffset(z, 1)...)
	assert.Equal(t, want, p.RecordBatches, "the stored bytes are the producer's, base offsets assigned")
	recs, err := records.Decode(p.RecordBatches)
	require.NoError(t, err)
	require.Len(t, recs, 3)
	assert.Equal(t, "z2", string(recs[2].Value))
	assert.Equal(t, int64(2), recs[2].Offset)
}

// stampOffset is batch as the broker stores it at base offset base: only
// the base offset (which the CRC does not cover) changes.
func stampOffset(batch []byte, base int64) []byte {
	out := append([]byte(nil), batch...)
	binary.BigEndian.PutUint64(out, uint64(base))
	return out
}

// TestWireProduceRequestLevelRefusals: acks other than -1, 0 and 1 get
// INVALID_REQUIRED_ACKS, and a transactional id
// TRANSACTIONAL_ID_AUTHORIZATION_FAILED, on every partition; nothing is
// stored. A partition or topic the broker lacks gets
// UNKNOWN_TOPIC_OR_PARTITION for itself only, and Produce never creates a
// topic (only Metadata does, TestWireMetadataAutoCreation).
func TestWireProduceRequestLevelRefusals(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	c := wiretest.Dial(t, b.Addr(), "c")
	for _, acks := range []int16{2, -2} {
		a := produceAnswers(t, c, produceRequest(9, acks, "orders", partBatch{0, valuesBatch("a")}, partBatch{1, valuesBatch("b")}))
		assert.Equal(t, []int16{codeInvalidRequiredAcks, codeInvalidRequiredAcks}, []int16{a[0].ErrorCode, a[1].ErrorCode}, "acks %d", acks)
	}
	ps := fetchPartitions(t, c, fetchRequest(12, 0, fetchAt{"orders", 0, 0}, fetchAt{"orders", 1, 0}))
	assert.Equal(t, int64(0), ps["orders-0"].HighWatermark, "nothing stored")
	assert.Equal(t, int64(0), ps["orders-1"].HighWatermark, "nothing stored")

	req := produceRequest(9, 1, "orders", partBatch{0, valuesBatch("kept")}, partBatch{9, valuesBatch("x")})
	req.Topics = append(req.Topics, kmsg.ProduceRequestTopic{Topic: "nope", Partitions: []kmsg.ProduceRequestTopicPartition{{Partition: 0, Records: valuesBatch("y")}}})
	a := produceAnswers(t, c, req)
	assert.Equal(t, []int16{codeNone, codeUnknownTopicOrPartition, codeUnknownTopicOrPartition}, []int16{a[0].ErrorCode, a[1].ErrorCode, a[2].ErrorCode})
	assert.Equal(t, int64(0), a[0].BaseOffset, "acks 1 is answered with its offset too")
	md := wiretest.Do[*kmsg.MetadataResponse](t, c, metadataRequest(12, []string{"nope"}))
	assert.Equal(t, []string{"nope:3:0"}, metadataTopics(md), "Produce creates no topic")
}

// rawFrame encodes req as clientID's request with correlation id corr.
func rawFrame(req kmsg.Request, corr int32) []byte {
	return kmsg.NewRequestFormatter(kmsg.FormatterClientID("c")).AppendRequest(nil, req, corr)
}

// readAnswer reads the next answer on c, requires correlation id corr,
// and decodes it as the answer to req.
func readAnswer(t *testing.T, c *wireclient.Client, req kmsg.Request, corr int32) kmsg.Response {
	t.Helper()
	require.NoError(t, c.SetDeadline(deadline()))
	frame, err := c.ReadFrame()
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(frame), 4)
	require.Equal(t, corr, int32(binary.BigEndian.Uint32(frame)), "answers come in request order")
	body := frame[4:]
	if req.IsFlexible() && req.Key() != int16(kmsg.ApiVersions) {
		body = body[1:] // the response header's empty tagged fields
	}
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	require.NoError(t, resp.ReadFrom(body))
	return resp
}

// TestWireProduceAcksZero: a produce with acks 0 gets no answer and does
// not disturb the answers after it: produce (acks 0), heartbeat, fetch
// and ApiVersions written at once get exactly three answers, the
// heartbeat's, the fetch's (which sees the acks-0 records once they are
// durable: nobody waits for them, the produce starts their flush) and
// ApiVersions', in order. A failed acks-0 produce closes the connection,
// after the answers owed before it: the only way to tell the producer, as
// Kafka does; good partitions of that request are stored.
func TestWireProduceAcksZero(t *testing.T) {
	t.Parallel()
	b := startBroker(t)

	t.Run("not answered, order kept", func(t *testing.T) {
		c := wiretest.Dial(t, b.Addr(), "c")
		m := join(t, c, "g", "orders")
		produce := produceRequest(9, 0, "orders", partBatch{2, valuesBatch("zero")})
		hb := wiretest.HeartbeatRequest(4, "g", m.MemberID, m.Generation)
		fetch := fetchRequest(12, waitTimeout/2, fetchAt{"orders", 2, 0})
		av := apiVersionsRequest(3)
		var raw []byte
		for i, req := range []kmsg.Request{produce, hb, fetch, av} {
			raw = append(raw, rawFrame(req, int32(i+1))...)
		}
		require.NoError(t, c.Send(raw))
		assert.Equal(t, codeNone, readAnswer(t, c, hb, 2).(*kmsg.HeartbeatResponse).ErrorCode)
		f := readAnswer(t, c, fetch, 3).(*kmsg.FetchResponse)
		assert.Equal(t, []string{"0:zero"}, decodedValues(t, f.Topics[0].Partitions[0].RecordBatches))
		assert.Equal(t, codeNone, readAnswer(t, c, av, 4).(*kmsg.ApiVersionsResponse).ErrorCode)
	})

	t.Run("a failure closes the connection", func(t *testing.T) {
		for _, tc := range []struct {
			name  string
			parts []partBatch
		}{
			{"bad CRC", []partBatch{{3, func() []byte { b := valuesBatch("a"); b[len(b)-1] ^= 1; return b }()}}},
			{"unknown partition beside a good one", []partBatch{{3, valuesBatch("stored")}, {9, valuesBatch("x")}}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				c := wiretest.Dial(t, b.Addr(), "c")
				m := join(t, c, "g-"+tc.name, "orders")
				hb := wiretest.HeartbeatRequest(4, "g-"+tc.name, m.MemberID, m.Generation)
				raw := append(rawFrame(hb, 1), rawFrame(produceRequest(9, 0, "orders", tc.parts...), 2)...)
				raw = append(raw, rawFrame(apiVersionsRequest(3), 3)...)
				require.NoError(t, c.Send(raw))
				assert.Equal(t, codeNone, readAnswer(t, c, hb, 1).(*kmsg.HeartbeatResponse).ErrorCode, "the answer owed before it")
				wiretest.RequireClosed(t, c)
			})
		}
		c := wiretest.Dial(t, b.Addr(), "check")
		p := fetchPartitions(t, c, fetchRequest(12, waitTimeout/2, fetchAt{"orders", 3, 0}))["orders-3"]
		assert.Equal(t, []string{"0:stored"}, decodedValues(t, p.RecordBatches), "the bad batch stored nothing; the good partition was stored")
	})
}
