package server

import (
	"encoding/binary"
	"hash/crc32"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/records"
	"github.com/minibroker/minibroker/wireclient"
)

// recrc recomputes a batch's CRC-32C after a test changed its header.
func recrc(b []byte) []byte {
	binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli)))
	return b
}

// TestProduceRejectsBadBatches: each bad batch gets Kafka's code, fails only
// its own partition, and stores nothing; the good partition beside it is
// stored.
func TestProduceRejectsBadBatches(t *testing.T) {
	t.Parallel()
	good := batch("ok")
	badCRC := batch("x")
	badCRC[len(badCRC)-1] ^= 1
	magic1 := batch("x")
	magic1[16] = 1
	recrc(magic1)
	miscount := batch("x", "y")
	binary.BigEndian.PutUint32(miscount[57:], 3) // record count
	recrc(miscount)
	zstd := batch("x")
	zstd[22] |= byte(records.CodecZstd) // attributes: codec bits, records not compressed at all
	recrc(zstd)
	codec7 := batch("x")
	codec7[22] |= 7
	recrc(codec7)
	tooLarge := batch(string(make([]byte, records.DefaultMaxMessageBytes)))
	twoBatches := append(batch("a"), batch("b")...)
	future := records.EncodeBatch(records.BatchSpec{FirstTimestamp: time.Now().Add(2 * time.Hour).UnixMilli(), Records: []records.Record{{Value: []byte("x")}}})

	cases := []struct {
		name    string
		version int16
		batch   []byte
		code    int16
	}{
		{"bad crc", 9, badCRC, kerr.CorruptMessage.Code},
		{"magic 1", 9, magic1, kerr.InvalidRecord.Code},
		{"record count", 9, miscount, kerr.InvalidRecord.Code},
		{"two batches", 9, twoBatches, kerr.InvalidRecord.Code},
		{"unknown codec", 9, codec7, kerr.CorruptMessage.Code},
		{"zstd before v7", 6, zstd, kerr.UnsupportedCompressionType.Code},
		{"too large", 9, tooLarge, kerr.MessageTooLarge.Code},
		{"timestamp an hour ahead", 9, future, kerr.InvalidTimestamp.Code},
		{"shorter than its length", 9, good[:40], kerr.InvalidRecord.Code}, // no whole batch: not exactly one
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			resp := call[*kmsg.ProduceResponse](e, "p", produceRequest(tc.version, "orders", map[int32][]byte{0: tc.batch, 1: append([]byte(nil), good...)}))
			ps := resp.Topics[0].Partitions
			require.Len(t, ps, 2)
			assert.Equal(t, tc.code, ps[0].ErrorCode, "%s", kerr.ErrorForCode(ps[0].ErrorCode))
			assert.Equal(t, int64(-1), ps[0].BaseOffset)
			if tc.version >= 8 {
				require.NotNil(t, ps[0].ErrorMessage)
				assert.NotEmpty(t, *ps[0].ErrorMessage)
			}
			assert.Zero(t, ps[1].ErrorCode, "the other partition is stored")
			start, hw, err := e.log.Offsets("orders", 0)
			require.NoError(t, err)
			assert.Equal(t, [2]int64{0, 0}, [2]int64{start, hw}, "the rejected batch stored nothing")
			_, hw, err = e.log.Offsets("orders", 1)
			require.NoError(t, err)
			assert.Equal(t, int64(1), hw)
		})
	}
}

func TestProduceRequestLevelRefusals(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	req := produceRequest(9, "orders", map[int32][]byte{0: batch("x"), 1: batch("y")})
	req.Acks = 2
	resp := call[*kmsg.ProduceResponse](e, "p", req)
	for _, p := range resp.Topics[0].Partitions {
		assert.Equal(t, kerr.InvalidRequiredAcks.Code, p.ErrorCode)
	}
	resp = call[*kmsg.ProduceResponse](e, "p", produceRequest(9, "nope", map[int32][]byte{0: batch("x")}))
	assert.Equal(t, kerr.UnknownTopicOrPartition.Code, resp.Topics[0].Partitions[0].ErrorCode)
	resp = call[*kmsg.ProduceResponse](e, "p", produceRequest(9, "orders", map[int32][]byte{9: batch("x")}))
	assert.Equal(t, kerr.UnknownTopicOrPartition.Code, resp.Topics[0].Partitions[0].ErrorCode)
	_, hw, err := e.log.Offsets("orders", 0)
	require.NoError(t, err)
	assert.Zero(t, hw)
}

// TestProduceAcksZero: no answer; a failure closes the connection.
func TestProduceAcksZero(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	req := produceRequest(9, "orders", map[int32][]byte{0: batch("x")})
	req.Acks = 0
	r := e.req("p", 9)
	assert.Nil(t, e.srv.handleProduce(r, req), "acks 0 is not answered")
	assert.NoError(t, r.failed)
	eventually(t, testTimeout, func() bool {
		_, hw, _ := e.log.Offsets("orders", 0)
		return hw == 1
	}, "an unanswered produce is still made durable")

	req = produceRequest(9, "orders", map[int32][]byte{0: []byte("junk")})
	req.Acks = 0
	r = e.req("p", 9)
	assert.Nil(t, e.srv.handleProduce(r, req))
	assert.ErrorIs(t, r.failed, errAcksZeroFailed, "the connection closes: the only way to tell the producer")
}

// TestProduceIdempotentRetry: a retried batch gets its original offsets and
// stores nothing; a gap is OUT_OF_ORDER_SEQUENCE_NUMBER.
func TestProduceIdempotentRetry(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	init := call[*kmsg.InitProducerIDResponse](e, "p", &kmsg.InitProducerIDRequest{Version: 4, ProducerID: -1, ProducerEpoch: -1})
	require.Zero(t, init.ErrorCode)
	idem := func(seq int32, values ...string) []byte {
		spec := records.BatchSpec{FirstTimestamp: time.Now().UnixMilli(), Idempotent: true,
			ProducerID: init.ProducerID, ProducerEpoch: init.ProducerEpoch, BaseSequence: seq}
		for _, v := range values {
			spec.Records = append(spec.Records, records.Record{Value: []byte(v)})
		}
		return records.EncodeBatch(spec)
	}
	e.produce("orders", 2, "before")
	first := call[*kmsg.ProduceResponse](e, "p", produceRequest(9, "orders", map[int32][]byte{2: idem(0, "a", "b")}))
	require.Zero(t, first.Topics[0].Partitions[0].ErrorCode)
	require.Equal(t, int64(1), first.Topics[0].Partitions[0].BaseOffset)
	retry := call[*kmsg.ProduceResponse](e, "p", produceRequest(9, "orders", map[int32][]byte{2: idem(0, "a", "b")}))
	require.Zero(t, retry.Topics[0].Partitions[0].ErrorCode)
	assert.Equal(t, int64(1), retry.Topics[0].Partitions[0].BaseOffset, "the original offsets")
	gap := call[*kmsg.ProduceResponse](e, "p", produceRequest(9, "orders", map[int32][]byte{2: idem(5, "c")}))
	assert.Equal(t, kerr.OutOfOrderSequenceNumber.Code, gap.Topics[0].Partitions[0].ErrorCode)
	_, hw, err := e.log.Offsets("orders", 2)
	require.NoError(t, err)
	assert.Equal(t, int64(3), hw, "the retry and the gap stored nothing")
}

// BenchmarkProduce sends Produce requests over a socket, one at a time,
// each with a 256 KiB batch of 100-byte records for each of four
// partitions (acks -1), to a log in memory: the connection, decoding,
// validation and appends, without the disk. MB/s counts batch bytes.
func BenchmarkProduce(b *testing.B) {
	addr, _ := benchServer(b, 4)
	c, err := wireclient.Dial(b.Context(), addr, "bench")
	require.NoError(b, err)
	defer c.Close()
	batches := map[int32][]byte{}
	for p := range int32(4) {
		batches[p] = benchBatch(256 << 10)
	}
	req := produceRequest(9, "bench", batches)
	b.SetBytes(4 * int64(len(batches[0])))
	b.ReportAllocs()
	for b.Loop() {
		resp, err := c.Request(b.Context(), req)
		require.NoError(b, err)
		for _, p := range resp.(*kmsg.ProduceResponse).Topics[0].Partitions {
			require.Zero(b, p.ErrorCode)
		}
	}
}
