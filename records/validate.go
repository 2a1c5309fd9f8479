package records

import (
	"encoding/binary"
	"fmt"
	"math"
)

// Batch is one record batch that passed Log.Validate, ready for
// Log.Append. It refers to the bytes given to Validate; Append writes the
// assigned base offset into them.
type Batch struct {
	raw []byte
	h   header
}

// Codec is the batch's compression codec. The server refuses zstd on
// Produce before v7 (ProduceRequest.validateRecords) with this.
func (b Batch) Codec() Codec { return b.h.codec() }

// NumRecords is the number of records in the batch.
func (b Batch) NumRecords() int32 { return b.h.recordCount }

// Size is the batch's size in bytes, header included.
func (b Batch) Size() int { return len(b.raw) }

// ProducerID is the batch's producer id, -1 for a producer that is not
// idempotent.
func (b Batch) ProducerID() int64 { return b.h.producerID }

// validator checks produced batches. It is safe for concurrent use.
type validator struct {
	cfg    Config // with defaults
	codecs *codecs
}

func newValidator(cfg Config) *validator {
	return &validator{cfg: cfg, codecs: newCodecs()}
}

// Validate checks one partition's records from a Produce request (v3+) as
// Kafka 4 does (ProduceRequest.validateRecords,
// UnifiedLog.analyzeAndValidateRecords, LogValidator), and returns the
// batch for Append. Errors wrap ErrInvalidRecord, ErrCorruptMessage,
// ErrMessageTooLarge or ErrInvalidTimestamp, with the
// rule broken. It reads the bytes in place: only compressed records are
// decompressed, through a fixed window.
//
// Because the stored bytes are the produced bytes (only the base offset
// is rewritten), Validate refuses what Kafka would rewrite instead: offset
// deltas other than 0..n-1 (INVALID_RECORD; Kafka renumbers a compressed
// batch and stores an uncompressed one as it is), a max timestamp that is
// not the records' largest (INVALID_RECORD; Kafka recomputes it) and the
// LogAppendTime attribute (INVALID_TIMESTAMP; Kafka clears it unless the
// max timestamp is -1). No client we know sends any of them.
func (l *Log) Validate(batch []byte) (Batch, error) {
	return l.v.validate(batch)
}

// ValidateTopic is Validate for a batch produced to topic: the batch
// limit is the topic's MaxMessageBytes (TopicSettings).
func (l *Log) ValidateTopic(topic string, batch []byte) (Batch, error) {
	return l.v.validateMax(batch, l.Settings(topic).MaxMessageBytes)
}

func (v *validator) validate(raw []byte) (Batch, error) {
	return v.validateMax(raw, v.cfg.MaxMessageBytes)
}

// validateMax is validate with maxBytes as the batch limit.
func (v *validator) validateMax(raw []byte, maxBytes int32) (Batch, error) {
	// ByteBufferLogInputStream.nextBatch, then ProduceRequest.validateRecords.
	if len(raw) < logOverhead {
		return Batch{}, fmt.Errorf("%w: %d bytes hold no record batch", ErrInvalidRecord, len(raw))
	}
	length := int64(int32(binary.BigEndian.Uint32(raw[offLength:])))
	if length < minLegacyLength {
		return Batch{}, fmt.Errorf("%w: batch length %d is less than the minimum record overhead %d", ErrCorruptMessage, length, minLegacyLength)
	}
	if length+logOverhead > int64(len(raw)) {
		return Batch{}, fmt.Errorf("%w: batch length %d exceeds the %d bytes given", ErrInvalidRecord, length, len(raw)-logOverhead)
	}
	if magic := int8(raw[offMagic]); magic != 2 {
		return Batch{}, fmt.Errorf("%w: magic %d: produce v3+ is only allowed record batches with magic version 2", ErrInvalidRecord, magic)
	}
	if length+logOverhead < int64(len(raw)) {
		return Batch{}, fmt.Errorf("%w: %d bytes after the first batch: produce v3+ is only allowed exactly one record batch per partition", ErrInvalidRecord, int64(len(raw))-length-logOverhead)
	}
	if len(raw) < batchHeaderBytes {
		return Batch{}, fmt.Errorf("%w: batch size %d is smaller than the minimum allowed overhead %d", ErrCorruptMessage, len(raw), batchHeaderBytes)
	}
	h := parseHeader(raw)
	// UnifiedLog.analyzeAndValidateRecords.
	if h.baseOffset != 0 {
		return Batch{}, fmt.Errorf("%w: base offset %d, should be 0", ErrInvalidRecord, h.baseOffset)
	}
	if int64(len(raw)) > int64(maxBytes) {
		return Batch{}, fmt.Errorf("%w: batch size %d exceeds the maximum %d", ErrMessageTooLarge, len(raw), maxBytes)
	}
	if sum := checksum(raw); sum != h.crc {
		return Batch{}, fmt.Errorf("%w: stored crc %d, computed crc %d", ErrCorruptMessage, h.crc, sum)
	}
	// LogValidator.validateBatch.
	if h.lastOffsetDelta < 0 {
		return Batch{}, fmt.Errorf("%w: invalid offset range: last offset delta %d", ErrInvalidRecord, h.lastOffsetDelta)
	}
	if h.recordCount <= 0 {
		return Batch{}, fmt.Errorf("%w: invalid reported count for record batch: %d", ErrInvalidRecord, h.recordCount)
	}
	if int64(h.lastOffsetDelta)+1 != int64(h.recordCount) {
		return Batch{}, fmt.Errorf("%w: inconsistent batch offset range [0, %d] and count of records %d", ErrInvalidRecord, h.lastOffsetDelta, h.recordCount)
	}
	if h.control() {
		return Batch{}, fmt.Errorf("%w: clients are not allowed to write control records", ErrInvalidRecord)
	}
	if h.idempotent() && h.baseSequence < 0 {
		return Batch{}, fmt.Errorf("%w: invalid sequence number %d in record batch with producer id %d", ErrInvalidRecord, h.baseSequence, h.producerID)
	}
	if h.transactional() && !h.idempotent() {
		return Batch{}, fmt.Errorf("%w: transactional batch without a producer id", ErrInvalidRecord)
	}
	if c := h.codec(); c > CodecZstd {
		return Batch{}, fmt.Errorf("%w: unknown compression codec %d", ErrCorruptMessage, c)
	}
	if h.logAppendTime() {
		return Batch{}, fmt.Errorf("%w: producer should not set timestamp type to LogAppendTime", ErrInvalidTimestamp)
	}
	if err := v.checkRecords(raw, &h); err != nil {
		return Batch{}, err
	}
	return Batch{raw: raw, h: h}, nil
}

// checkRecords walks the records of a batch whose header passed: the
// count must be exact, offset deltas must run 0..n-1, timestamps must be
// within the configured bounds, and the header's max timestamp must be
// the records' largest.
func (v *validator) checkRecords(raw []byte, h *header) error {
	var s scanner
	if c := h.codec(); c == CodecNone {
		s = scanner{buf: raw[batchHeaderBytes:], end: len(raw) - batchHeaderBytes}
	} else {
		d := v.codecs.get()
		defer v.codecs.put(d)
		if err := d.open(&s, c, raw[batchHeaderBytes:], v.cfg.MaxUncompressedBytes); err != nil {
			return err
		}
	}
	lo, hi := v.cfg.timestampBounds(v.cfg.Now().UnixMilli())
	if s.r == nil && flatRecordsPass(s.buf[s.pos:s.end], h, lo, hi) {
		return nil
	}
	return scanRecords(&s, h, lo, hi)
}

// scanRecords is checkRecords through the scanner, which words every
// error: timestamps must lie within [lo, hi].
func scanRecords(s *scanner, h *header, lo, hi int64) error {
	maxTS := int64(math.MinInt64)
	var tsErr error
	for i := int32(0); i < h.recordCount; i++ {
		rec, err := s.next(i)
		if err != nil {
			return err
		}
		if rec.offsetDelta != i {
			return fmt.Errorf("%w: record %d has offset delta %d", ErrInvalidRecord, i, rec.offsetDelta)
		}
		ts := h.baseTimestamp + rec.timestampDelta // wraps as Java's long does
		if ts > maxTS {
			maxTS = ts
		}
		// LogValidator.validateTimestamp: NO_TIMESTAMP (-1) is not checked.
		// Kafka reports a structural error before any timestamp error.
		if ts != -1 && (ts < lo || ts > hi) && tsErr == nil {
			tsErr = fmt.Errorf("%w: timestamp %d of record %d is out of range [%d, %d]", ErrInvalidTimestamp, ts, i, lo, hi)
		}
	}
	if s.more() {
		return fmt.Errorf("%w: incorrect declared batch size, records still remaining after %d records", ErrInvalidRecord, h.recordCount)
	}
	if s.err != nil {
		return s.err
	}
	if tsErr != nil {
		return tsErr
	}
	// Kafka's maxBatchTimestamp starts at NO_TIMESTAMP (-1); a client may
	// also send the true maximum when every timestamp is below -1.
	if h.maxTimestamp != maxTS && h.maxTimestamp != max(maxTS, -1) {
		return fmt.Errorf("%w: max timestamp %d, but the records' largest is %d", ErrInvalidRecord, h.maxTimestamp, maxTS)
	}
	return nil
}
