package records

import (
	"encoding/binary"
	"hash/crc32"
	"math"
)

// A record batch (magic 2) on the wire and on disk, as Kafka's
// DefaultRecordBatch lays it out; all integers are big endian:
//
//	offset  size  field
//	 0      8     baseOffset            rewritten by the broker; not under the CRC
//	 8      4     batchLength           bytes after this field
//	12      4     partitionLeaderEpoch  not under the CRC
//	16      1     magic                 2
//	17      4     crc                   CRC-32C of bytes 21..end
//	21      2     attributes            bits 0-2 codec, 3 timestamp type,
//	                                    4 transactional, 5 control
//	23      4     lastOffsetDelta
//	27      8     baseTimestamp
//	35      8     maxTimestamp
//	43      8     producerId            -1: not idempotent
//	51      2     producerEpoch
//	53      4     baseSequence
//	57      4     recordCount
//	61      ...   records, compressed as a whole when the codec is not none
const (
	logOverhead      = 12 // baseOffset and batchLength, Kafka's Records.LOG_OVERHEAD
	batchHeaderBytes = 61 // Kafka's DefaultRecordBatch.RECORD_BATCH_OVERHEAD

	offLength          = 8
	offMagic           = 16
	offCRC             = 17
	offAttributes      = 21
	offLastOffsetDelta = 23
	offBaseTimestamp   = 27
	offMaxTimestamp    = 35
	offProducerID      = 43
	offProducerEpoch   = 51
	offBaseSequence    = 53
	offRecordCount     = 57

	// minLegacyLength is the smallest batchLength Kafka's
	// ByteBufferLogInputStream accepts before looking at the magic
	// (LegacyRecord.RECORD_OVERHEAD_V0).
	minLegacyLength = 14

	attrCodecMask     = 0x07
	attrLogAppendTime = 0x08
	attrTransactional = 0x10
	attrControl       = 0x20
)

// castagnoli is the CRC-32C table Kafka's batches use.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// header is a batch's fixed fields, decoded.
type header struct {
	baseOffset      int64
	length          int32 // batchLength: bytes after the length field
	magic           int8
	crc             uint32
	attributes      int16
	lastOffsetDelta int32
	baseTimestamp   int64
	maxTimestamp    int64
	producerID      int64
	producerEpoch   int16
	baseSequence    int32
	recordCount     int32
}

// parseHeader decodes the first batchHeaderBytes of b, which must hold
// them.
func parseHeader(b []byte) header {
	_ = b[batchHeaderBytes-1]
	return header{
		baseOffset:      int64(binary.BigEndian.Uint64(b)),
		length:          int32(binary.BigEndian.Uint32(b[offLength:])),
		magic:           int8(b[offMagic]),
		crc:             binary.BigEndian.Uint32(b[offCRC:]),
		attributes:      int16(binary.BigEndian.Uint16(b[offAttributes:])),
		lastOffsetDelta: int32(binary.BigEndian.Uint32(b[offLastOffsetDelta:])),
		baseTimestamp:   int64(binary.BigEndian.Uint64(b[offBaseTimestamp:])),
		maxTimestamp:    int64(binary.BigEndian.Uint64(b[offMaxTimestamp:])),
		producerID:      int64(binary.BigEndian.Uint64(b[offProducerID:])),
		producerEpoch:   int16(binary.BigEndian.Uint16(b[offProducerEpoch:])),
		baseSequence:    int32(binary.BigEndian.Uint32(b[offBaseSequence:])),
		recordCount:     int32(binary.BigEndian.Uint32(b[offRecordCount:])),
	}
}

// size is the whole batch's size in bytes, log overhead included.
func (h *header) size() int64 { return int64(h.length) + logOverhead }

// lastOffset is the offset of the batch's last record.
func (h *header) lastOffset() int64 { return h.baseOffset + int64(h.lastOffsetDelta) }

// nextOffset is the offset that follows the batch.
func (h *header) nextOffset() int64 { return h.lastOffset() + 1 }

// codec is the batch's compression codec; it may be one we do not know.
func (h *header) codec() Codec { return Codec(h.attributes & attrCodecMask) }

func (h *header) transactional() bool { return h.attributes&attrTransactional != 0 }
func (h *header) control() bool       { return h.attributes&attrControl != 0 }
func (h *header) logAppendTime() bool { return h.attributes&attrLogAppendTime != 0 }

// idempotent reports whether the batch carries a producer id
// (RecordBatch.hasProducerId).
func (h *header) idempotent() bool { return h.producerID >= 0 }

// lastSequence is the sequence of the batch's last record, wrapping past
// math.MaxInt32 to 0 as DefaultRecordBatch.incrementSequence does.
func (h *header) lastSequence() int32 { return incrementSequence(h.baseSequence, h.lastOffsetDelta) }

// incrementSequence adds n >= 0 to a sequence number, wrapping past
// math.MaxInt32 to 0 (DefaultRecordBatch.incrementSequence).
func incrementSequence(seq, n int32) int32 {
	if seq > math.MaxInt32-n {
		return n - (math.MaxInt32 - seq) - 1
	}
	return seq + n
}

// checksum is the CRC-32C a batch's crc field must hold: over everything
// from the attributes to the end (DefaultRecordBatch.computeChecksum).
func checksum(batch []byte) uint32 {
	return crc32.Checksum(batch[offAttributes:], castagnoli)
}

// setBaseOffset writes offset into a batch's baseOffset field. The CRC does
// not cover it, so the batch stays valid.
func setBaseOffset(batch []byte, offset int64) {
	binary.BigEndian.PutUint64(batch, uint64(offset))
}

// crc32Update extends a CRC-32C with b.
func crc32Update(sum uint32, b []byte) uint32 { return crc32.Update(sum, castagnoli, b) }
