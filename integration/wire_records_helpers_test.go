package integration

// Helpers for the wire tests of records (wire_produce, wire_fetch,
// wire_list_offsets, wire_producer_id): batches built by hand so that
// each can break exactly one rule, and Produce, Fetch and ListOffsets
// requests with their answers reduced to what the tests compare.

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"slices"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/records"
	"github.com/minibroker/minibroker/testkit/wiretest"
	"github.com/minibroker/minibroker/wireclient"
)

// Kafka error codes of the records APIs, by kerr name.
const (
	codeCorruptMessage                     int16 = 2
	codeMessageTooLarge                    int16 = 10
	codeInvalidRequiredAcks                int16 = 21
	codeOutOfOrderSequenceNumber           int16 = 45
	codeInvalidProducerEpoch               int16 = 47
	codeTransactionalIDAuthorizationFailed int16 = 53
	codeUnsupportedCompressionType         int16 = 76
	codeInvalidRecord                      int16 = 87
	codeInvalidProducerIDMapping           int16 = 49
)

// Where the fields of a record batch (magic 2) lie; records/batch.go has
// the whole layout.
const (
	batchOffLength      = 8
	batchOffMagic       = 16
	batchOffCRC         = 17
	batchOffAttributes  = 21
	batchOffLastDelta   = 23
	batchOffRecordCount = 57
	batchHeaderBytes    = 61
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// setCRC recomputes a batch's CRC-32C, so that a test can change a field
// and break only the rule it means to.
func setCRC(b []byte) []byte {
	binary.BigEndian.PutUint32(b[batchOffCRC:], crc32.Checksum(b[batchOffAttributes:], castagnoli))
	return b
}

// edited returns a copy of batch changed by edit, with its CRC made
// right again.
func edited(batch []byte, edit func(b []byte)) []byte {
	b := slices.Clone(batch)
	edit(b)
	return setCRC(b)
}

// testRecord is the key and value of record i of a test batch: keys say
// where a record came from, so a test can compare what it reads back.
func testRecord(value string) records.Record {
	return records.Record{Key: []byte("k-" + value), Value: []byte(value)}
}

// valuesBatch is a plain producer's uncompressed batch of values, each
// keyed "k-<value>", timestamped now.
func valuesBatch(values ...string) []byte {
	spec := records.BatchSpec{FirstTimestamp: time.Now().UnixMilli()}
	for _, v := range values {
		spec.Records = append(spec.Records, testRecord(v))
	}
	return records.EncodeBatch(spec)
}

// idempotentBatch is valuesBatch from producer pid at epoch, its first
// record at sequence seq.
func idempotentBatch(pid int64, epoch int16, seq int32, values ...string) []byte {
	spec := records.BatchSpec{FirstTimestamp: time.Now().UnixMilli(), Idempotent: true,
		ProducerID: pid, ProducerEpoch: epoch, BaseSequence: seq}
	for _, v := range values {
		spec.Records = append(spec.Records, testRecord(v))
	}
	return records.EncodeBatch(spec)
}

// craftedBatch is an uncompressed batch whose records carry the given
// offset deltas (record i has value "v<i>") and whose header claims count
// records and lastDelta as its last offset delta: the pieces a test
// breaks to make the header and the records disagree.
func craftedBatch(deltas []int32, count, lastDelta int32) []byte {
	now := time.Now().UnixMilli()
	var recs []byte
	for i, d := range deltas {
		v := fmt.Sprintf("v%d", i)
		rec := kmsg.Record{OffsetDelta: d, Key: []byte("k-" + v), Value: []byte(v)}
		body := rec.AppendTo(nil)[1:] // AppendTo writes the zero Length as one varint byte
		recs = binary.AppendVarint(recs, int64(len(body)))
		recs = append(recs, body...)
	}
	b := kmsg.RecordBatch{
		PartitionLeaderEpoch: -1, Magic: 2, LastOffsetDelta: lastDelta, FirstTimestamp: now, MaxTimestamp: now,
		ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1, NumRecords: count, Records: recs,
	}
	b.Length = int32(batchHeaderBytes - 12 + len(recs))
	return setCRC(b.AppendTo(nil))
}

// timedBatch is an uncompressed batch of values whose record i has
// timestamp first+deltas[i] (Unix milliseconds).
func timedBatch(first int64, deltas []int64, values ...string) []byte {
	spec := records.BatchSpec{FirstTimestamp: first}
	for i, v := range values {
		r := testRecord(v)
		r.TimestampDelta = deltas[i]
		spec.Records = append(spec.Records, r)
	}
	return records.EncodeBatch(spec)
}

// zstdBatch is valuesBatch with its records compressed with zstd.
func zstdBatch(t *testing.T, values ...string) []byte {
	t.Helper()
	plain := valuesBatch(values...)
	enc, err := zstd.NewWriter(nil)
	require.NoError(t, err)
	defer enc.Close()
	out := slices.Clone(plain[:batchHeaderBytes])
	out = enc.EncodeAll(plain[batchHeaderBytes:], out)
	binary.BigEndian.PutUint32(out[batchOffLength:], uint32(len(out)-12))
	binary.BigEndian.PutUint16(out[batchOffAttributes:], uint16(records.CodecZstd))
	return setCRC(out)
}

// batchOfSize is an uncompressed batch of one record whose value makes the
// batch exactly size bytes.
func batchOfSize(t *testing.T, size int) []byte {
	t.Helper()
	// The record's own overhead varies with the varint lengths; find the
	// value length that gives the size.
	for n := max(size-100, 0); n <= size; n++ {
		b := records.EncodeBatch(records.BatchSpec{FirstTimestamp: time.Now().UnixMilli(),
			Records: []records.Record{{Value: make([]byte, n)}}})
		if len(b) == size {
			return b
		}
	}
	t.Fatalf("no batch of exactly %d bytes", size)
	return nil
}

// partBatch is the records of one partition of a Produce request.
type partBatch struct {
	partition int32
	records   []byte
}

// produceRequest produces to topic at version with acks.
func produceRequest(version, acks int16, topic string, parts ...partBatch) *kmsg.ProduceRequest {
	req := kmsg.NewPtrProduceRequest()
	req.Version, req.Acks, req.TimeoutMillis = version, acks, 5000
	rt := kmsg.ProduceRequestTopic{Topic: topic}
	for _, p := range parts {
		rt.Partitions = append(rt.Partitions, kmsg.ProduceRequestTopicPartition{Partition: p.partition, Records: p.records})
	}
	req.Topics = []kmsg.ProduceRequestTopic{rt}
	return req
}

// produceAnswers sends req and returns each partition's answer in request
// order, after checking that every requested partition is answered.
func produceAnswers(t *testing.T, c *wireclient.Client, req *kmsg.ProduceRequest) []kmsg.ProduceResponseTopicPartition {
	t.Helper()
	resp := wiretest.Do[*kmsg.ProduceResponse](t, c, req)
	require.Len(t, resp.Topics, len(req.Topics))
	var out []kmsg.ProduceResponseTopicPartition
	for i, rt := range req.Topics {
		require.Equal(t, rt.Topic, resp.Topics[i].Topic)
		require.Len(t, resp.Topics[i].Partitions, len(rt.Partitions))
		for j, p := range rt.Partitions {
			require.Equal(t, p.Partition, resp.Topics[i].Partitions[j].Partition)
			out = append(out, resp.Topics[i].Partitions[j])
		}
	}
	return out
}

// produceOne sends a one-partition request and returns its answer.
func produceOne(t *testing.T, c *wireclient.Client, req *kmsg.ProduceRequest) kmsg.ProduceResponseTopicPartition {
	t.Helper()
	out := produceAnswers(t, c, req)
	require.Len(t, out, 1)
	return out[0]
}

// produceValues produces values as one batch (Produce v9, acks -1) and
// returns its base offset, requiring success.
func produceValues(t *testing.T, c *wireclient.Client, topic string, partition int32, values ...string) int64 {
	t.Helper()
	rp := produceOne(t, c, produceRequest(9, -1, topic, partBatch{partition, valuesBatch(values...)}))
	require.Equal(t, codeNone, rp.ErrorCode, "produce to %s-%d: %v", topic, partition, rp.ErrorMessage)
	return rp.BaseOffset
}

// ensureTopic creates topic with partitions (default 1) by CreateTopics.
func ensureTopic(t *testing.T, c *wireclient.Client, topic string, partitions ...int32) {
	t.Helper()
	n := int32(1)
	if len(partitions) > 0 {
		n = partitions[0]
	}
	resp := wiretest.Do[*kmsg.CreateTopicsResponse](t, c, createTopicsRequest(7, false, newTopic(topic, n, 1)))
	require.Equal(t, codeNone, resp.Topics[0].ErrorCode, "create %s", topic)
}

// fetchAt is one partition of a Fetch and the offset to read from.
type fetchAt struct {
	topic     string
	partition int32
	offset    int64
}

// fetchRequest reads parts at version, waiting up to maxWait for a first
// byte (MinBytes 1), with 1 MiB limits for the answer and each partition.
func fetchRequest(version int16, maxWait time.Duration, parts ...fetchAt) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.Version, req.ReplicaID = version, -1
	req.MaxWaitMillis, req.MinBytes, req.MaxBytes = int32(maxWait/time.Millisecond), 1, 1<<20
	for _, p := range parts {
		n := len(req.Topics)
		if n == 0 || req.Topics[n-1].Topic != p.topic {
			req.Topics = append(req.Topics, kmsg.FetchRequestTopic{Topic: p.topic})
			n++
		}
		fp := kmsg.NewFetchRequestTopicPartition()
		fp.Partition, fp.FetchOffset, fp.PartitionMaxBytes = p.partition, p.offset, 1<<20
		req.Topics[n-1].Partitions = append(req.Topics[n-1].Partitions, fp)
	}
	return req
}

// fetchPartitions sends req and returns every partition's answer keyed
// "topic-partition".
func fetchPartitions(t *testing.T, c *wireclient.Client, req *kmsg.FetchRequest) map[string]kmsg.FetchResponseTopicPartition {
	t.Helper()
	resp := wiretest.Do[*kmsg.FetchResponse](t, c, req)
	require.Equal(t, codeNone, resp.ErrorCode)
	require.Equal(t, int32(0), resp.SessionID, "no fetch sessions")
	out := map[string]kmsg.FetchResponseTopicPartition{}
	for _, rt := range resp.Topics {
		for _, p := range rt.Partitions {
			out[fmt.Sprintf("%s-%d", rt.Topic, p.Partition)] = p
		}
	}
	return out
}

// decodedValues decodes fetched batches into "offset:value" strings,
// checking that each record's key is the one testRecord gave it.
func decodedValues(t *testing.T, raw []byte) []string {
	t.Helper()
	recs, err := records.Decode(raw)
	require.NoError(t, err)
	out := []string{}
	for _, r := range recs {
		require.Equal(t, "k-"+string(r.Value), string(r.Key), "record at offset %d", r.Offset)
		out = append(out, fmt.Sprintf("%d:%s", r.Offset, r.Value))
	}
	return out
}

// listOffset asks ListOffsets at version for one partition's offset at
// timestamp ts (-1 latest, -2 earliest, -3 max timestamp).
func listOffset(t *testing.T, c *wireclient.Client, version int16, topic string, partition int32, ts int64) kmsg.ListOffsetsResponseTopicPartition {
	t.Helper()
	req := kmsg.NewPtrListOffsetsRequest()
	req.Version, req.ReplicaID = version, -1
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Partition, rp.Timestamp, rp.MaxNumOffsets = partition, ts, 1
	req.Topics = []kmsg.ListOffsetsRequestTopic{{Topic: topic, Partitions: []kmsg.ListOffsetsRequestTopicPartition{rp}}}
	resp := wiretest.Do[*kmsg.ListOffsetsResponse](t, c, req)
	require.Len(t, resp.Topics, 1)
	require.Len(t, resp.Topics[0].Partitions, 1)
	return resp.Topics[0].Partitions[0]
}
