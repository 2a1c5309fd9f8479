package offsets

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// JournalPrefix starts the name of every journal segment in the data
// directory: offsets.journal.<sequence>, the sequence in decimal. Segments
// are replayed in sequence order over offsets.json.
const JournalPrefix = "offsets.journal."

// Journal record layout. Each record is one batch of commits (one group
// commit), written with one write and made durable with one fsync:
//
//	length  uint32 big endian: the payload's size in bytes
//	crc     uint32 big endian: CRC-32C (Castagnoli) of the payload
//	payload recordVersion, uvarint count of commits, then per commit:
//	        string group, uvarint count of entries, then per entry:
//	        string topic, varint partition, varint offset,
//	        varint leader epoch, string metadata
//
// A string is a uvarint length and that many bytes of UTF-8.
const (
	recordHeaderBytes = 8
	recordVersion     = 1
	// minPayloadBytes is the smallest payload: the version and a count.
	// A zero length is never valid, so zero-filled bytes after a torn
	// write cannot pass for a record.
	minPayloadBytes = 2
	// maxPayloadBytes bounds a length read from disk before we trust it.
	maxPayloadBytes = 1 << 30
)

// castagnoli is the CRC-32C table, the checksum Kafka's record batches use.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// appendRecord appends one journal record holding commits to dst.
func appendRecord(dst []byte, commits []*pending) []byte {
	start := len(dst)
	dst = append(dst, make([]byte, recordHeaderBytes)...)
	dst = append(dst, recordVersion)
	dst = binary.AppendUvarint(dst, uint64(len(commits)))
	for _, c := range commits {
		dst = appendString(dst, c.group)
		dst = binary.AppendUvarint(dst, uint64(len(c.entries)))
		for _, e := range c.entries {
			dst = appendString(dst, e.Topic)
			dst = binary.AppendVarint(dst, int64(e.Partition))
			dst = binary.AppendVarint(dst, e.Offset)
			dst = binary.AppendVarint(dst, int64(e.LeaderEpoch))
			dst = appendString(dst, e.Metadata)
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

// errTorn marks a record that is cut short or fails its checksum: what a
// write interrupted by a crash leaves behind.
var errTorn = errors.New("torn record")

// nextRecord splits the record at the start of data from the rest. It
// returns errTorn for a record that is incomplete or whose checksum fails,
// and another error for a length no record can have.
func nextRecord(data []byte) (payload, rest []byte, err error) {
	if len(data) < recordHeaderBytes {
		return nil, nil, errTorn
	}
	n := binary.BigEndian.Uint32(data)
	if n < minPayloadBytes || n > maxPayloadBytes {
		return nil, nil, fmt.Errorf("%w: impossible length %d", errTorn, n)
	}
	if uint64(len(data)-recordHeaderBytes) < uint64(n) {
		return nil, nil, errTorn
	}
	payload = data[recordHeaderBytes : recordHeaderBytes+int(n)]
	if crc32.Checksum(payload, castagnoli) != binary.BigEndian.Uint32(data[4:]) {
		return nil, nil, fmt.Errorf("%w: checksum mismatch", errTorn)
	}
	return payload, data[recordHeaderBytes+int(n):], nil
}

// validRecordAfter reports whether any intact record starts after the
// first byte of data. A torn write leaves at most one damaged record, at
// the very end, so damage followed by an intact record is corruption of
// data that was already durable.
func validRecordAfter(data []byte) bool {
	for i := 1; i+recordHeaderBytes <= len(data); i++ {
		if _, _, err := nextRecord(data[i:]); err == nil {
			return true
		}
	}
	return false
}

// decodeRecord applies the commits of one record's payload, in order. A
// payload that passed its checksum but does not decode is corruption.
func decodeRecord(payload []byte, apply func(group string, entries []Entry)) error {
	r := reader{buf: payload}
	if v := r.byte(); v != recordVersion {
		return fmt.Errorf("record version %d, want %d", v, recordVersion)
	}
	commits := r.uvarint()
	for i := uint64(0); i < commits && r.err == nil; i++ {
		group := r.string()
		n := r.uvarint()
		if n > uint64(len(r.buf)) { // every entry takes bytes
			r.fail("entry count %d exceeds the record", n)
			break
		}
		entries := make([]Entry, 0, n)
		for j := uint64(0); j < n && r.err == nil; j++ {
			e := Entry{Topic: r.string()}
			e.Partition = r.int32()
			e.Offset = r.varint()
			e.LeaderEpoch = r.int32()
			e.Metadata = r.string()
			entries = append(entries, e)
		}
		if r.err != nil {
			break
		}
		if err := Validate(entries, MaxMetadataBytes); err != nil {
			return fmt.Errorf("group %q: %w", group, err)
		}
		if !utf8.ValidString(group) {
			return fmt.Errorf("%w: group %q", ErrInvalidEntry, group)
		}
		apply(group, entries)
	}
	if r.err != nil {
		return r.err
	}
	if len(r.buf) != 0 {
		return fmt.Errorf("%d bytes after the last commit", len(r.buf))
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

// segment is one journal file.
type segment struct {
	seq  uint64
	path string
	size int64 // bytes of intact records
}

// segmentPath returns the path of segment seq in dir.
func segmentPath(dir string, seq uint64) string {
	return filepath.Join(dir, JournalPrefix+strconv.FormatUint(seq, 10))
}

// listSegments returns dir's journal segments in sequence order. Files
// that only start like a segment (temp files of a segment being created)
// are not segments.
func listSegments(dir string) ([]segment, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("read data dir %s: %w", dir, err)
	}
	var segs []segment
	for _, e := range entries {
		digits, ok := strings.CutPrefix(e.Name(), JournalPrefix)
		if !ok || digits == "" || strings.TrimLeft(digits, "0123456789") != "" {
			continue
		}
		seq, err := strconv.ParseUint(digits, 10, 64)
		if err != nil || strconv.FormatUint(seq, 10) != digits {
			continue // not a name we write
		}
		segs = append(segs, segment{seq: seq, path: filepath.Join(dir, e.Name())})
	}
	slices.SortFunc(segs, func(a, b segment) int {
		switch {
		case a.seq < b.seq:
			return -1
		case a.seq > b.seq:
			return 1
		}
		return 0
	})
	return segs, nil
}

// replaySegment applies every intact record of the segment at path, in
// order, and returns the length of its intact prefix and of the file. When
// last is true, a torn record at the end (a write cut short by a crash,
// never acknowledged) ends the prefix; anywhere else, and whenever an
// intact record follows the damage, it is an error: data that was durable
// is damaged, and we never drop it silently.
func replaySegment(path string, last bool, apply func(group string, entries []Entry)) (valid, total int64, err error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, 0, fmt.Errorf("%w: read journal %s: %w", ErrStorage, path, err)
	}
	rest := data
	for len(rest) > 0 {
		payload, next, err := nextRecord(rest)
		at := len(data) - len(rest)
		if err != nil {
			if last && !validRecordAfter(rest) {
				return int64(at), int64(len(data)), nil
			}
			return 0, 0, fmt.Errorf("%w %s: record at byte %d: %w", ErrCorrupt, path, at, err)
		}
		if err := decodeRecord(payload, apply); err != nil {
			return 0, 0, fmt.Errorf("%w %s: record at byte %d: %w", ErrCorrupt, path, at, err)
		}
		rest = next
	}
	return int64(len(data)), int64(len(data)), nil
}

// truncateFile cuts the file at path to size and makes that durable.
func truncateFile(path string, size int64) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	err = f.Truncate(size)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// isNotExist reports whether err says a file is missing.
func isNotExist(err error) bool { return errors.Is(err, fs.ErrNotExist) }
