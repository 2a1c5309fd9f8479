package records

import (
	"errors"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// indexIntervalBytes is how many bytes of batches lie between two entries
// of a segment's sparse index (Kafka's index.interval.bytes is 4096). A
// lookup reads at most about this much to find a batch. With 16-byte
// entries, 1 GiB of batches costs 2 MiB of index, whatever the batch size
// (TestIndexMemory measures it).
const indexIntervalBytes = 8 << 10

// segmentSuffix ends a segment's file name; the name before it is the
// segment's base offset in 20 decimal digits, as Kafka names them.
const segmentSuffix = ".log"

// segmentName is the file name of the segment starting at base.
func segmentName(base int64) string { return fmt.Sprintf("%020d%s", base, segmentSuffix) }

// parseSegmentName returns the base offset a segment file name holds.
func parseSegmentName(name string) (int64, bool) {
	digits, ok := strings.CutSuffix(name, segmentSuffix)
	if !ok || len(digits) != 20 {
		return 0, false
	}
	base, err := strconv.ParseInt(digits, 10, 64)
	return base, err == nil && base >= 0
}

// indexEntry is one entry of a segment's sparse index.
type indexEntry struct {
	rel   uint32 // base offset of the batch, relative to the segment's
	pos   uint32 // byte position of the batch in the segment
	maxTS int64  // largest batch max timestamp before pos in the segment
}

// segment is one file of a partition's log: batches back to back, the
// first starting at offset base. f and the fields after it are guarded
// by the partition's mu.
//
// Only the active (newest) segment keeps its file open: an idle
// partition holds one descriptor, however many segments it has. A read
// of an older segment opens the file for itself and closes it after. The
// active segment's file is shared: a read or flush using it outside mu
// counts itself in users, and a roll closes the file once the last of
// them is done.
type segment struct {
	base int64
	path string
	f    segmentFile // nil once sealed and no user is left

	users       int  // reads and flushes using f outside mu
	closeUnused bool // sealed: close f when users drops to 0

	size        int64        // bytes written
	fileEnd     int64        // how long the file may be, when allocation took it past size (prealloc.go); else <= size
	noAlloc     bool         // an Allocate failed: append plainly to this segment
	next        int64        // offset after the last batch written
	index       []indexEntry // sparse: one entry per indexIntervalBytes
	lastIndexed int64        // position of the last entry; 0 with none
	maxTS       int64        // largest batch max timestamp; math.MinInt64 when empty
	maxTSOffset int64        // base offset of the first batch with maxTS
}

func newSegment(dir string, base int64, f segmentFile) *segment {
	return &segment{
		base: base, path: filepath.Join(dir, segmentName(base)), f: f,
		next: base, maxTS: math.MinInt64, maxTSOffset: -1,
	}
}

// fits reports whether a batch of size bytes ending at lastOffset may go
// into the segment: it must not take the segment past segmentBytes
// (unless the segment is empty: a batch is never split), and its offsets
// must stay within 2^31 of the base, as Kafka's LogSegment.shouldRoll
// requires for its relative offsets.
func (s *segment) fits(size, lastOffset, segmentBytes int64) bool {
	if lastOffset-s.base > math.MaxInt32 {
		return false
	}
	return s.size == 0 || s.size+size <= segmentBytes
}

// track records a batch written at pos: index entry, max timestamp, size
// and next offset.
func (s *segment) track(pos int64, h *header) {
	if pos > 0 && pos-s.lastIndexed >= indexIntervalBytes {
		s.index = append(s.index, indexEntry{rel: uint32(h.baseOffset - s.base), pos: uint32(pos), maxTS: s.maxTS})
		s.lastIndexed = pos
	}
	if h.maxTimestamp > s.maxTS {
		s.maxTS, s.maxTSOffset = h.maxTimestamp, h.baseOffset
	}
	s.size = pos + h.size()
	s.next = h.nextOffset()
}

// seal drops the index's spare capacity once the segment stops growing.
func (s *segment) seal() { s.index = slices.Clone(s.index) }

// truncate forgets every batch at or past size; maxTS and maxTSOffset are
// restored by the caller, from the durable point it truncates to.
func (s *segment) truncate(size, next int64) {
	i := sort.Search(len(s.index), func(i int) bool { return int64(s.index[i].pos) >= size })
	s.index = s.index[:i]
	s.lastIndexed = 0
	if i > 0 {
		s.lastIndexed = int64(s.index[i-1].pos)
	}
	s.size, s.next = size, next
}

// offsetFloor is the position of a batch at or before the batch holding
// offset: where a scan for offset starts.
func (s *segment) offsetFloor(offset int64) int64 {
	rel := offset - s.base
	i := sort.Search(len(s.index), func(i int) bool { return int64(s.index[i].rel) > rel })
	if i == 0 {
		return 0
	}
	return int64(s.index[i-1].pos)
}

// timeFloor is a position before which no batch has a max timestamp at or
// above ts: where a scan for the first such batch starts.
func (s *segment) timeFloor(ts int64) int64 {
	i := sort.Search(len(s.index), func(i int) bool { return s.index[i].maxTS >= ts })
	if i == 0 {
		return 0
	}
	return int64(s.index[i-1].pos)
}

// errShort marks a read past the readable end of a segment.
var errShort = errors.New("past the end of the segment")

// fileScanner reads batch headers and bytes of one segment file through a
// window, so that a walk over many small batches costs few reads.
type fileScanner struct {
	f     segmentFile
	limit int64  // bytes that may be read
	buf   []byte // the window
	start int64  // file position of buf[0]
	n     int    // valid bytes in buf
}

// at returns n bytes at pos (n <= len(buf)), reading them if the window
// does not hold them. The slice is valid until the next call.
func (w *fileScanner) at(pos int64, n int) ([]byte, error) {
	if pos < 0 || pos+int64(n) > w.limit {
		return nil, errShort
	}
	if pos >= w.start && pos+int64(n) <= w.start+int64(w.n) {
		return w.buf[pos-w.start : pos-w.start+int64(n)], nil
	}
	want := min(int64(len(w.buf)), w.limit-pos)
	m, err := w.f.ReadAt(w.buf[:want], pos)
	if int64(m) < want {
		if err == nil || err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		w.n = 0
		return nil, err
	}
	w.start, w.n = pos, m
	return w.buf[:n], nil
}

// header reads the batch header at pos.
func (w *fileScanner) header(pos int64) (header, error) {
	b, err := w.at(pos, batchHeaderBytes)
	if err != nil {
		return header{}, err
	}
	return parseHeader(b), nil
}

// checksum computes the CRC-32C of the batch of size bytes at pos, reading
// it through the window in pieces.
func (w *fileScanner) checksum(pos, size int64) (uint32, error) {
	var sum uint32
	for p, end := pos+offAttributes, pos+size; p < end; {
		n := min(int64(len(w.buf)), end-p)
		b, err := w.at(p, int(n))
		if err != nil {
			return 0, err
		}
		sum = crc32Update(sum, b)
		p += n
	}
	return sum, nil
}

// use returns the segment's open file for a read or sync outside mu, or
// nil if the segment is sealed and closed (the caller opens it by path).
// Each non-nil result must be given back with done. Called with the
// partition's mu held.
func (s *segment) use() segmentFile {
	if s.f != nil {
		s.users++
	}
	return s.f
}

// done gives back a file use returned, closing it if the segment was
// sealed meanwhile and this was its last user. Called with the
// partition's mu held.
func (s *segment) done() {
	s.users--
	if s.users == 0 && s.closeUnused {
		s.closeFile()
	}
}

// release closes a sealed segment's file, now or when its last user is
// done. Called with the partition's mu held.
func (s *segment) release() {
	if s.users > 0 {
		s.closeUnused = true
		return
	}
	s.closeFile()
}

func (s *segment) closeFile() {
	if s.f != nil {
		_ = s.f.Close()
		s.f = nil
	}
	s.closeUnused = false
}
