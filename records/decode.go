package records

import (
	"encoding/binary"
	"fmt"
	"io"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// DecodedRecord is one record of a stored batch, as a consumer sees it.
type DecodedRecord struct {
	Offset    int64
	Timestamp int64 // Unix milliseconds
	Key       []byte
	Value     []byte
	Headers   []kmsg.Header
}

// decodeLimit bounds what Decode decompresses of one batch.
const decodeLimit = DefaultUncompressedFactor * DefaultMaxMessageBytes

// Decode parses whole batches back to back, as a Fetch answer carries
// them, into their records, decompressing where needed: what a consumer
// does with what it fetched. The labs print fetched records with it, and
// tests compare them. It refuses what is not whole, valid batches.
func Decode(data []byte) ([]DecodedRecord, error) {
	var out []DecodedRecord
	for len(data) > 0 {
		var b kmsg.RecordBatch
		if len(data) < logOverhead {
			return out, fmt.Errorf("%w: %d bytes left, less than a batch header", ErrCorruptMessage, len(data))
		}
		size := int64(binary.BigEndian.Uint32(data[8:])) + logOverhead
		if size < batchHeaderBytes || size > int64(len(data)) {
			return out, fmt.Errorf("%w: batch of %d bytes in %d", ErrCorruptMessage, size, len(data))
		}
		if err := b.ReadFrom(data[:size]); err != nil {
			return out, fmt.Errorf("%w: %w", ErrCorruptMessage, err)
		}
		recs, err := decompressed(Codec(b.Attributes&attrCodecMask), b.Records)
		if err != nil {
			return out, err
		}
		for i := range b.NumRecords {
			n, vlen := binary.Varint(recs)
			if vlen <= 0 || n < 0 || int64(vlen)+n > int64(len(recs)) {
				return out, fmt.Errorf("%w: record %d of the batch at offset %d", ErrInvalidRecord, i, b.FirstOffset)
			}
			var r kmsg.Record
			if err := r.ReadFrom(recs[:int64(vlen)+n]); err != nil {
				return out, fmt.Errorf("%w: record %d: %w", ErrInvalidRecord, i, err)
			}
			recs = recs[int64(vlen)+n:]
			out = append(out, DecodedRecord{
				Offset: b.FirstOffset + int64(r.OffsetDelta), Timestamp: b.FirstTimestamp + r.TimestampDelta64,
				Key: r.Key, Value: r.Value, Headers: r.Headers,
			})
		}
		data = data[size:]
	}
	return out, nil
}

// decompressed returns a batch's records section uncompressed.
func decompressed(codec Codec, data []byte) ([]byte, error) {
	d := &decoders{window: make([]byte, windowBytes)}
	var s scanner
	if err := d.open(&s, codec, data, decodeLimit); err != nil {
		return nil, err
	}
	if s.r == nil {
		return s.buf[:s.end], nil
	}
	out, err := io.ReadAll(io.LimitReader(s.r, decodeLimit+1))
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrCorruptMessage, codec, err)
	}
	if len(out) > decodeLimit {
		return nil, fmt.Errorf("%w: a batch decompresses to more than %d bytes", ErrMessageTooLarge, decodeLimit)
	}
	return out, nil
}
