package records

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
)

// scanner reads the records section of one batch, compressed or not,
// without copying record bodies: uncompressed records are read where they
// lie, decompressed ones stream through a fixed window, and keys, values
// and headers are skipped over, never materialised. Nothing is allocated
// from a length field: a length is only ever compared with the bytes that
// back it.
type scanner struct {
	buf   []byte    // buf[pos:end] is read but not consumed
	pos   int       //
	end   int       //
	off   int64     // bytes consumed before buf[0]
	r     io.Reader // more bytes; nil when buf holds them all
	read  int64     // bytes taken from r
	limit int64     // most bytes r may yield
	eof   bool      // r has nothing more
	err   error     // why r stopped early: corrupt or too large
}

// consumed is how many bytes of the records section have been consumed.
func (s *scanner) consumed() int64 { return s.off + int64(s.pos) }

// fill tries to make n bytes available (n <= len(s.buf)).
func (s *scanner) fill(n int) bool {
	if s.end-s.pos >= n {
		return true
	}
	if s.r == nil || s.eof {
		return false
	}
	if s.pos > 0 {
		copy(s.buf, s.buf[s.pos:s.end])
		s.off += int64(s.pos)
		s.end -= s.pos
		s.pos = 0
	}
	for empty := 0; s.end < n && !s.eof; {
		m, err := s.r.Read(s.buf[s.end:])
		s.end += m
		s.read += int64(m)
		switch {
		case s.read > s.limit:
			s.stop(fmt.Errorf("%w: more than %d bytes: %w", ErrMessageTooLarge, s.limit, errTooLarge))
		case err == io.EOF:
			s.eof = true
		case err != nil:
			if errors.Is(err, ErrCorruptMessage) || errors.Is(err, ErrMessageTooLarge) {
				s.stop(err)
			} else {
				s.stop(fmt.Errorf("%w: decompress: %w", ErrCorruptMessage, err))
			}
		case m == 0:
			if empty++; empty > 100 {
				s.stop(fmt.Errorf("%w: decompressor makes no progress", ErrCorruptMessage))
			}
		}
	}
	return s.end-s.pos >= n
}

func (s *scanner) stop(err error) {
	s.err, s.eof = err, true
}

// failure is the error for input that ran out: the decompressor's error
// if it stopped early, else the record error msg.
func (s *scanner) failure(format string, args ...any) error {
	if s.err != nil {
		return s.err
	}
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalidRecord}, args...)...)
}

// varint consumes one zigzag varint. Most fields of a record are small
// numbers that fit one byte: that case is inlined.
func (s *scanner) varint() (int64, bool) {
	if s.pos < s.end {
		if b := s.buf[s.pos]; b < 0x80 {
			s.pos++
			return int64(b>>1) ^ -int64(b&1), true
		}
	}
	return s.varintSlow()
}

func (s *scanner) varintSlow() (int64, bool) {
	s.fill(binary.MaxVarintLen64) // fewer bytes may do at the end
	v, n := binary.Varint(s.buf[s.pos:s.end])
	if n <= 0 {
		return 0, false
	}
	s.pos += n
	return v, true
}

// varint32 consumes one varint that must fit an int32, as Kafka's
// ByteUtils.readVarint.
func (s *scanner) varint32() (int32, bool) {
	v, ok := s.varint()
	if !ok || v < math.MinInt32 || v > math.MaxInt32 {
		return 0, false
	}
	return int32(v), true
}

// skip consumes n >= 0 bytes.
func (s *scanner) skip(n int64) bool {
	for n > 0 {
		if s.pos == s.end && !s.fill(1) {
			return false
		}
		k := int64(s.end - s.pos)
		if k > n {
			k = n
		}
		s.pos += int(k)
		n -= k
	}
	return true
}

// more reports whether any byte remains after the records.
func (s *scanner) more() bool { return s.fill(1) }

// record is what validation and lookups need of one record.
type record struct {
	timestampDelta int64
	offsetDelta    int32
}

// next consumes one record, checking its structure as Kafka's
// DefaultRecord.readFrom does: the fields must take exactly the declared
// length, header counts and header key lengths must not be negative.
// Errors wrap ErrInvalidRecord, or the decompressor's ErrCorruptMessage
// or ErrMessageTooLarge.
func (s *scanner) next(index int32) (record, error) {
	var rec record
	length, ok := s.varint32()
	if !ok {
		return rec, s.failure("record %d: incorrect declared batch size, premature EOF reached", index)
	}
	if length < 0 || (s.r == nil && int(length) > s.end-s.pos) {
		return rec, s.failure("record %d: invalid record size %d", index, length)
	}
	start := s.consumed()
	end := start + int64(length)
	// within reports whether n more bytes stay inside the record.
	within := func(n int64) bool { return n >= 0 && s.consumed()+n <= end }
	if !s.fill(1) {
		return rec, s.failure("record %d: premature EOF reached", index)
	}
	s.pos++ // attributes: unused in magic 2
	if rec.timestampDelta, ok = s.varint(); !ok {
		return rec, s.failure("record %d: bad timestamp delta", index)
	}
	if rec.offsetDelta, ok = s.varint32(); !ok {
		return rec, s.failure("record %d: bad offset delta", index)
	}
	for _, field := range [2]string{"key", "value"} {
		n, ok := s.varint32()
		if !ok {
			return rec, s.failure("record %d: bad %s length", index, field)
		}
		if n >= 0 { // negative: null
			if !within(int64(n)) || !s.skip(int64(n)) {
				return rec, s.failure("record %d: %s of %d bytes overruns the record", index, field, n)
			}
		}
	}
	headers, ok := s.varint32()
	if !ok || headers < 0 {
		return rec, s.failure("record %d: found invalid number of record headers %d", index, headers)
	}
	for i := int32(0); i < headers; i++ {
		if !within(2) { // every header takes at least two bytes
			return rec, s.failure("record %d: %d headers overrun the record", index, headers)
		}
		k, ok := s.varint32()
		if !ok || k < 0 {
			return rec, s.failure("record %d: invalid negative header key size %d", index, k)
		}
		if !within(int64(k)) || !s.skip(int64(k)) {
			return rec, s.failure("record %d: header key of %d bytes overruns the record", index, k)
		}
		v, ok := s.varint32()
		if !ok {
			return rec, s.failure("record %d: bad header value length", index)
		}
		if v >= 0 && (!within(int64(v)) || !s.skip(int64(v))) {
			return rec, s.failure("record %d: header value of %d bytes overruns the record", index, v)
		}
	}
	if got := s.consumed() - start; got != int64(length) {
		return rec, s.failure("record %d: invalid record size: expected to read %d bytes in record payload, but instead read %d", index, length, got)
	}
	return rec, nil
}

// flatRecordsPass runs checkRecords' checks over records that lie whole
// in b (uncompressed, or a raw snappy block decoded whole), reading them
// in place without the scanner's refills: the common case, a batch that
// passes, at a fraction of the cost. It only ever says yes to what the
// scanner accepts; at the first thing it does not like (a failed check, a
// long varint it leaves to binary.Varint, anything unusual) it says no,
// and the scanner runs over the batch to find and word the error exactly
// as Kafka would.
func flatRecordsPass(b []byte, h *header, lo, hi int64) bool {
	pos := 0
	maxTS := int64(math.MinInt64)
	for i := int32(0); i < h.recordCount; i++ {
		length, n := varintAt(b, pos)
		if n <= 0 || length < 0 || length > int64(len(b)-pos-n) {
			return false
		}
		pos += n
		rec := b[:pos+int(length)] // every read below stays inside the record
		if pos == len(rec) {
			return false
		}
		pos++ // attributes: unused in magic 2
		tsDelta, n := varintAt(rec, pos)
		if n <= 0 {
			return false
		}
		pos += n
		offsetDelta, n := varintAt(rec, pos)
		if n <= 0 || offsetDelta != int64(i) {
			return false
		}
		pos += n
		for range 2 { // key and value; negative is null
			size, n := varintAt(rec, pos)
			if n <= 0 || size < math.MinInt32 || size > int64(len(rec)-pos-n) {
				return false
			}
			pos += n + int(max(size, 0))
		}
		headers, n := varintAt(rec, pos)
		if n <= 0 || headers < 0 || headers > int64(len(rec)-pos-n) {
			return false
		}
		pos += n
		for range headers {
			key, n := varintAt(rec, pos)
			if n <= 0 || key < 0 || key > int64(len(rec)-pos-n) {
				return false
			}
			pos += n + int(key)
			value, n := varintAt(rec, pos)
			if n <= 0 || value < math.MinInt32 || value > int64(len(rec)-pos-n) {
				return false
			}
			pos += n + int(max(value, 0))
		}
		if pos != len(rec) {
			return false
		}
		ts := h.baseTimestamp + tsDelta // wraps as Java's long does
		if ts != -1 && (ts < lo || ts > hi) {
			return false
		}
		maxTS = max(maxTS, ts)
	}
	return pos == len(b) && (h.maxTimestamp == maxTS || h.maxTimestamp == max(maxTS, -1))
}

// varintAt decodes the zigzag varint at b[i:] as binary.Varint does,
// returning n <= 0 when it does not; one and two bytes, most of a
// record's fields, are decoded inline.
func varintAt(b []byte, i int) (int64, int) {
	if i >= len(b) {
		return 0, 0
	}
	if x := b[i]; x < 0x80 {
		return int64(x>>1) ^ -int64(x&1), 1
	}
	if i+1 < len(b) && b[i+1] < 0x80 {
		u := uint64(b[i]&0x7f) | uint64(b[i+1])<<7
		return int64(u>>1) ^ -int64(u&1), 2
	}
	return binary.Varint(b[i:])
}
