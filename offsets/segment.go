package offsets

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/minibroker/minibroker/internal/atomicfile"
	"github.com/minibroker/minibroker/internal/datadir"
)

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

// segmentSeq returns the sequence of the segment named name, if name is
// one we write: JournalPrefix and a decimal number without leading zeros.
func segmentSeq(name string) (uint64, bool) {
	digits, ok := strings.CutPrefix(name, JournalPrefix)
	if !ok || digits == "" || strings.TrimLeft(digits, "0123456789") != "" {
		return 0, false
	}
	seq, err := strconv.ParseUint(digits, 10, 64)
	if err != nil || strconv.FormatUint(seq, 10) != digits {
		return 0, false
	}
	return seq, true
}

// isTempName reports whether name is a temp file of ours: a snapshot
// (offsets.json.tmp-*), a segment being created, or a cut tail being saved
// (offsets.journal.*.tmp-*). Each is what a write interrupted by a crash
// leaves; none holds anything acknowledged.
func isTempName(name string) bool {
	base, suffix, ok := strings.Cut(name, ".tmp-")
	if !ok || suffix == "" {
		return false
	}
	return base == FileName || strings.HasPrefix(base, JournalPrefix)
}

// dirScan is what Open finds in the data directory.
type dirScan struct {
	segments []segment // in sequence order
	temps    []string  // leftover temp files, regular files only
}

// scanDir lists dir's journal segments and leftover temp files. A segment
// name on anything but a regular file (a symbolic link, a FIFO, a
// directory) stops it: we never follow, replay, cut or fold through it.
func scanDir(dir string) (dirScan, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return dirScan{}, fmt.Errorf("%w: read data dir %s: %w", ErrStorage, dir, err)
	}
	var scan dirScan
	for _, e := range entries {
		path := filepath.Join(dir, e.Name())
		if seq, ok := segmentSeq(e.Name()); ok {
			if !e.Type().IsRegular() {
				return dirScan{}, fmt.Errorf("%w: %s is a %s, not a journal segment; move it out of the data directory",
					datadir.ErrNotRegular, path, datadir.Kind(e.Type()))
			}
			scan.segments = append(scan.segments, segment{seq: seq, path: path})
		} else if isTempName(e.Name()) && e.Type().IsRegular() {
			scan.temps = append(scan.temps, path)
		}
	}
	slices.SortFunc(scan.segments, func(a, b segment) int {
		switch {
		case a.seq < b.seq:
			return -1
		case a.seq > b.seq:
			return 1
		}
		return 0
	})
	return scan, nil
}

// sectorBytes is the unit a disk writes whole or not at all. A write cut
// short by a power failure can leave the end of a file zero-filled from a
// sector boundary on: the file's new size reached the disk, and some of
// its data did not.
const sectorBytes = 512

// replaySegment applies every intact record of the segment at path, in
// order, and returns the length of its intact prefix. Zeros from a record
// boundary to the end of the file are space the writer filled ahead of
// its records (journal_writer.go) and end the prefix in any segment. When
// newest is true, bytes at the end that a torn write explains (tornTail)
// end the prefix and are returned as tail (the part the write meant to
// fill, tornBytes), for the caller to cut off: that write was never
// acknowledged. Anything else that is not a whole, intact record is an
// error wrapping ErrCorrupt that names the file, the byte offset and what
// to do: data that was durable is damaged, and we never drop it silently.
func replaySegment(path string, newest bool, apply func(*op)) (valid int64, tail []byte, err error) {
	data, err := datadir.ReadFile(path)
	if err != nil {
		return 0, nil, fmt.Errorf("%w: read journal %s: %w", ErrStorage, path, err)
	}
	rest := data
	for len(rest) > 0 {
		at := int64(len(data) - len(rest))
		payload, next, err := nextRecord(rest)
		if err != nil {
			if allZero(rest) {
				return at, nil, nil
			}
			if newest && tornTail(rest, at, err) {
				return at, tornBytes(rest, err), nil
			}
			if errors.Is(err, errChecksum) {
				err = fmt.Errorf("%w: the whole record is there, so this is damage to durable data, not a torn write", err)
			}
			return 0, nil, corruptAt(path, at, err)
		}
		if err := decodeRecord(payload, apply); err != nil {
			return 0, nil, corruptAt(path, at, err)
		}
		rest = next
	}
	return int64(len(data)), nil, nil
}

// corruptAt is the error for damage at byte at of the segment at path.
func corruptAt(path string, at int64, err error) error {
	return fmt.Errorf("%w %s: record at byte %d: %w. The ops from there on cannot be trusted; "+
		"to accept losing them, cut the file to %d bytes (truncate -s %d %s), "+
		"or move the segment out of the data directory to drop all of it", ErrCorrupt, path, at, err, at, at, path)
}

// tornTail reports whether tail, the bytes of the newest segment from byte
// at (which does not start a whole, intact record, for the reason why,
// and is not all zeros) to the end of the file, is what a write cut short
// by a crash leaves, and so may be cut off:
//
//   - a record cut short: fewer bytes than its header, or than its length;
//   - a whole record failing its checksum whose bytes are zero from a
//     sector boundary inside it to the end of the file (in a preallocated
//     segment, the zeros run on past the record to the end).
//
// A whole record failing its checksum otherwise (bit rot), an impossible
// length that is not zeros, or any intact record after the damage is not
// a torn write: a crash damages only the last record, the one nobody was
// told is durable.
func tornTail(tail []byte, at int64, why error) bool {
	if validRecordAfter(tail) {
		return false
	}
	switch {
	case errors.Is(why, errShort):
		return true
	case errors.Is(why, errChecksum):
		end := at + recordHeaderBytes + int64(binary.BigEndian.Uint32(tail))
		zeros := at + int64(len(bytes.TrimRight(tail, "\x00"))) // first byte of the zero run
		boundary := (zeros + sectorBytes - 1) / sectorBytes * sectorBytes
		return boundary > at && boundary < end
	}
	return false
}

func allZero(b []byte) bool { return len(bytes.TrimLeft(b, "\x00")) == 0 }

// tornBytes is the part of a torn tail (tornTail) the torn write was
// meant to fill: for a whole record failing its checksum, the record; the
// zeros after it are space filled ahead, and nothing was written there.
func tornBytes(tail []byte, why error) []byte {
	if errors.Is(why, errChecksum) {
		return tail[:min(len(tail), recordHeaderBytes+int(binary.BigEndian.Uint32(tail)))]
	}
	return tail
}

// validRecordAfter reports whether any intact record starts after the
// first byte of data. None starts in the zeros that end it (a record's
// length is never zero), so a preallocated segment's zeros are not
// searched.
func validRecordAfter(data []byte) bool {
	written := len(bytes.TrimRight(data, "\x00"))
	for i := 1; i < written && i+recordHeaderBytes <= len(data); i++ {
		if _, _, err := nextRecord(data[i:]); err == nil {
			return true
		}
	}
	return false
}

// cutTail saves tail, the torn end of seg, beside it as <segment>.cut-<n>
// (the first n free), durably, and only then cuts it off the segment. A
// crash in between leaves the tail in both; the next Open cuts it again
// into the next n. It returns the saved file's path.
func cutTail(fsys atomicfile.FS, seg segment, tail []byte) (string, error) {
	var saved string
	for n := 1; ; n++ {
		saved = fmt.Sprintf("%s.cut-%d", seg.path, n)
		_, err := os.Lstat(saved)
		if errors.Is(err, os.ErrNotExist) {
			break
		}
		if err != nil {
			return "", err
		}
	}
	if err := atomicfile.Write(fsys, saved, tail); err != nil {
		return "", err
	}
	f, err := datadir.OpenFile(seg.path, os.O_WRONLY, 0)
	if err != nil {
		return "", err
	}
	err = f.Truncate(seg.size)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return saved, err
}
