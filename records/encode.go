package records

import (
	"encoding/binary"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Record is one record for EncodeBatch.
type Record struct {
	Key, Value []byte // nil is a null key or value
	// TimestampDelta is the record's timestamp less the batch's
	// FirstTimestamp, in milliseconds.
	TimestampDelta int64
}

// BatchSpec describes a batch for EncodeBatch.
type BatchSpec struct {
	Records []Record
	// FirstTimestamp is the first record's timestamp, Unix milliseconds.
	FirstTimestamp int64
	// Idempotent marks the batch as an idempotent producer's, with
	// ProducerID, ProducerEpoch and the first record's BaseSequence;
	// otherwise they are -1, as a plain producer sends them.
	Idempotent    bool
	ProducerID    int64
	ProducerEpoch int16
	BaseSequence  int32
}

// EncodeBatch encodes records as a producer sends them in a Produce
// request: one uncompressed magic-2 batch at base offset 0, with create
// timestamps and its CRC-32C. The labs use it to produce over a raw
// socket, and tests to make batches of their own.
func EncodeBatch(spec BatchSpec) []byte {
	var recs []byte
	maxTS := spec.FirstTimestamp
	for i, r := range spec.Records {
		maxTS = max(maxTS, spec.FirstTimestamp+r.TimestampDelta)
		rec := kmsg.Record{TimestampDelta64: r.TimestampDelta, OffsetDelta: int32(i), Key: r.Key, Value: r.Value}
		body := rec.AppendTo(nil)[1:] // AppendTo writes the zero Length as one varint byte
		recs = binary.AppendVarint(recs, int64(len(body)))
		recs = append(recs, body...)
	}
	b := kmsg.RecordBatch{
		PartitionLeaderEpoch: -1, Magic: 2,
		LastOffsetDelta: int32(len(spec.Records) - 1), FirstTimestamp: spec.FirstTimestamp, MaxTimestamp: maxTS,
		ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1, NumRecords: int32(len(spec.Records)),
		Records: recs,
	}
	if spec.Idempotent {
		b.ProducerID, b.ProducerEpoch, b.FirstSequence = spec.ProducerID, spec.ProducerEpoch, spec.BaseSequence
	}
	b.Length = int32(batchHeaderBytes - logOverhead + len(recs))
	out := b.AppendTo(nil)
	binary.BigEndian.PutUint32(out[offCRC:], checksum(out))
	return out
}
