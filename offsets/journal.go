package offsets

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
)

// JournalPrefix starts the name of every journal segment in the data
// directory: offsets.journal.<sequence>, the sequence in decimal. Segments
// are replayed in sequence order over offsets.json.
const JournalPrefix = "offsets.journal."

// Journal record layout. Each record is one batch of ops (one group
// commit), written with one write and made durable with one fsync:
//
//	length  uint32 big endian: the payload's size in bytes
//	crc     uint32 big endian: CRC-32C (Castagnoli) of the payload
//	payload version, uvarint count of ops, then the ops in order.
//
// Version 2 (written now): each op is a kind byte, then string group, then
//
//	commit (1): uvarint count of entries, then per entry: string topic,
//	            varint partition, varint offset, varint leader epoch,
//	            string metadata, varint commit timestamp (ms)
//	delete (2): varint expire-before (ms; 0: no limit), uvarint count of
//	            keys (0: every partition of the group), then per key:
//	            string topic, varint partition
//
// Version 1 (read only): each op is a commit without the kind byte and
// without the commit timestamp.
//
// A string is a uvarint length and that many bytes of UTF-8.
const (
	recordHeaderBytes = 8
	recordVersion     = 2
	recordVersion1    = 1
	// minPayloadBytes is the smallest payload: the version and a count.
	// A zero length is never valid, so zero-filled bytes after a torn
	// write cannot pass for a record.
	minPayloadBytes = 2
	// maxPayloadBytes bounds a length read from disk before we trust it.
	maxPayloadBytes = 1 << 30
)

// castagnoli is the CRC-32C table, the checksum Kafka's record batches use.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// appendRecord appends one journal record holding ops to dst.
func appendRecord(dst []byte, ops []*op) []byte {
	start := len(dst)
	dst = append(dst, make([]byte, recordHeaderBytes)...)
	dst = append(dst, recordVersion)
	dst = binary.AppendUvarint(dst, uint64(len(ops)))
	for _, o := range ops {
		dst = append(dst, byte(o.kind))
		dst = appendString(dst, o.group)
		switch o.kind {
		case opCommit:
			dst = binary.AppendUvarint(dst, uint64(len(o.entries)))
			for _, e := range o.entries {
				dst = appendString(dst, e.Topic)
				dst = binary.AppendVarint(dst, int64(e.Partition))
				dst = binary.AppendVarint(dst, e.Offset)
				dst = binary.AppendVarint(dst, int64(e.LeaderEpoch))
				dst = appendString(dst, e.Metadata)
				dst = binary.AppendVarint(dst, e.CommitTimestampMs)
			}
		case opDelete:
			dst = binary.AppendVarint(dst, o.expireMs)
			dst = binary.AppendUvarint(dst, uint64(len(o.keys)))
			for _, k := range o.keys {
				dst = appendString(dst, k.Topic)
				dst = binary.AppendVarint(dst, int64(k.Partition))
			}
		default:
			panic(fmt.Sprintf("offsets: op kind %d", o.kind))
		}
	}
	payload := dst[start+recordHeaderBytes:]
	binary.BigEndian.PutUint32(dst[start:], uint32(len(payload)))
	binary.BigEndian.PutUint32(dst[start+4:], crc32.Checksum(payload, castagnoli))
	return dst
}

func appendString(dst []byte, s string) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(s)))
	return append(dst, s...)
}

// The ways the bytes at some position can fail to be a record. Whether
// that is a torn write or corruption depends on where they are (tail.go).
var (
	// errShort: fewer bytes than the header, or than its length says.
	errShort = errors.New("record cut short")
	// errLength: a length no record can have.
	errLength = errors.New("impossible record length")
	// errChecksum: every byte is there, and the CRC does not match.
	errChecksum = errors.New("checksum mismatch")
)

// nextRecord splits the record at the start of data from the rest, or says
// why data does not start with a whole, intact record: errShort, errLength
// or errChecksum.
func nextRecord(data []byte) (payload, rest []byte, err error) {
	if len(data) < recordHeaderBytes {
		return nil, nil, errShort
	}
	n := binary.BigEndian.Uint32(data)
	if n < minPayloadBytes || n > maxPayloadBytes {
		return nil, nil, fmt.Errorf("%w %d", errLength, n)
	}
	if uint64(len(data)-recordHeaderBytes) < uint64(n) {
		return nil, nil, errShort
	}
	payload = data[recordHeaderBytes : recordHeaderBytes+int(n)]
	if crc32.Checksum(payload, castagnoli) != binary.BigEndian.Uint32(data[4:]) {
		return nil, nil, errChecksum
	}
	return payload, data[recordHeaderBytes+int(n):], nil
}

// decodeRecord applies the ops of one record's payload, in order. A
// payload that passed its checksum but does not decode is corruption.
// Every op is checked before any is applied.
func decodeRecord(payload []byte, apply func(*op)) error {
	r := reader{buf: payload}
	version := r.byte()
	if r.err == nil && version != recordVersion && version != recordVersion1 {
		return fmt.Errorf("record version %d, want %d or %d", version, recordVersion1, recordVersion)
	}
	count := r.uvarint()
	var ops []*op
	for i := uint64(0); i < count && r.err == nil; i++ {
		kind := opCommit
		if version >= 2 {
			kind = opKind(r.byte())
		}
		o := &op{kind: kind, group: r.string()}
		switch kind {
		case opCommit:
			o.entries = r.entries(version)
		case opDelete:
			o.expireMs = r.varint()
			o.keys = r.keys()
		default:
			r.fail("op kind %d", kind)
		}
		if r.err != nil {
			break
		}
		if err := checkOp(o); err != nil {
			return err
		}
		ops = append(ops, o)
	}
	if r.err != nil {
		return r.err
	}
	if len(r.buf) != 0 {
		return fmt.Errorf("%d bytes after the last op", len(r.buf))
	}
	for _, o := range ops {
		apply(o)
	}
	return nil
}

// checkOp applies the rules Enqueue and the delete methods apply, to an
// op read back from disk.
func checkOp(o *op) error {
	if err := validateGroup(o.group); err != nil {
		return err
	}
	if err := Validate(o.entries, MaxMetadataBytes); err != nil {
		return fmt.Errorf("group %q: %w", o.group, err)
	}
	for _, k := range o.keys {
		if err := validateKey(k); err != nil {
			return fmt.Errorf("group %q: %w", o.group, err)
		}
	}
	if o.expireMs < 0 {
		return fmt.Errorf("group %q: expire time %d", o.group, o.expireMs)
	}
	return nil
}

// reader decodes a payload; the first error sticks.
type reader struct {
	buf []byte
	err error
}

func (r *reader) fail(format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf(format, args...)
	}
}

// count reads a count of items that take at least one byte each.
func (r *reader) count(what string) uint64 {
	n := r.uvarint()
	if n > uint64(len(r.buf)) {
		r.fail("%s count %d exceeds the record", what, n)
		return 0
	}
	return n
}

func (r *reader) entries(version byte) []Entry {
	n := r.count("entry")
	entries := make([]Entry, 0, n)
	for j := uint64(0); j < n && r.err == nil; j++ {
		e := Entry{Topic: r.string()}
		e.Partition = r.int32()
		e.Offset = r.varint()
		e.LeaderEpoch = r.int32()
		e.Metadata = r.string()
		if version >= 2 {
			e.CommitTimestampMs = r.varint()
		}
		entries = append(entries, e)
	}
	return entries
}

func (r *reader) keys() []Key {
	n := r.count("key")
	if n == 0 {
		return nil
	}
	keys := make([]Key, 0, n)
	for j := uint64(0); j < n && r.err == nil; j++ {
		keys = append(keys, Key{Topic: r.string(), Partition: r.int32()})
	}
	return keys
}

func (r *reader) byte() byte {
	if r.err != nil || len(r.buf) == 0 {
		r.fail("record truncated")
		return 0
	}
	b := r.buf[0]
	r.buf = r.buf[1:]
	return b
}

func (r *reader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.buf)
	if n <= 0 {
		r.fail("bad uvarint")
		return 0
	}
	r.buf = r.buf[n:]
	return v
}

func (r *reader) varint() int64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Varint(r.buf)
	if n <= 0 {
		r.fail("bad varint")
		return 0
	}
	r.buf = r.buf[n:]
	return v
}

func (r *reader) int32() int32 {
	v := r.varint()
	if v < -1<<31 || v > 1<<31-1 {
		r.fail("value %d overflows int32", v)
		return 0
	}
	return int32(v)
}

func (r *reader) string() string {
	n := r.uvarint()
	if r.err != nil {
		return ""
	}
	if n > uint64(len(r.buf)) {
		r.fail("string of %d bytes exceeds the record", n)
		return ""
	}
	s := string(r.buf[:n])
	r.buf = r.buf[n:]
	return s
}
