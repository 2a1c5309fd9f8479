package offsets

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/minibroker/minibroker/internal/atomicfile"
)

// journalWriter is the writing end of the journal: the segment records
// are appended to and what appending needs. Only the writer touches it:
// the writer goroutine, or whoever holds Store.writing (Close once the
// writer stopped, tests); Store.writing hands it over under Store.mu. It
// takes no lock and knows nothing of the store's counters or tables:
// what it did is in its results, for the writer to apply under mu.
type journalWriter struct {
	dir         string
	fs          atomicfile.FS
	observeSync func(time.Duration)

	active    atomicfile.File // the segment records append to; nil until needed
	activeSeg segment
	nextSeq   uint64 // sequence number of the next segment
	buf       []byte // the record being written, reused
	broken    error  // a failed write could not be cut off: refuse ops

	// preallocBytes is how far ahead of its records the active segment is
	// filled with zeros (0: not at all), and allocated where the zeros
	// end: the file's size on disk.
	preallocBytes int64
	allocated     int64
}

// Preallocation. An fdatasync after an append must write the file's new
// size as well as its data; after an overwrite of bytes the file already
// has, only the data. So the writer fills the active segment with zeros a
// chunk ahead of its records and writes each record over them: one
// fdatasync in a chunk's worth of records carries the new size (the one
// that writes the zeros, with the record after them), every other only
// its record. On ext4 here that cut an 800-byte fdatasync from about
// 235 to 135 µs and its system CPU from 120 to 70 µs (docs/performance.md).
// The zeros are written, not fallocated: an unwritten extent turns into a
// written one at the first write into it, and that is metadata again.
//
// Replay reads zeros from a record boundary to the end of a segment as
// space not yet written (segment.go): a record never starts with zeros.
const (
	maxPreallocBytes = 1 << 20
	minPreallocBytes = 64 << 10
)

// preallocFor is the chunk of zeros for a store that folds its journal at
// compactBytes: a segment is sealed at about that size, so more would be
// written for nothing.
func preallocFor(compactBytes int64) int64 {
	if compactBytes < 0 {
		return maxPreallocBytes
	}
	return min(max(compactBytes, minPreallocBytes), maxPreallocBytes)
}

// zeros is what preallocate writes, a piece at a time.
var zeros = make([]byte, 64<<10)

// preallocate makes sure the active segment has room for n more bytes of
// records: if not, it writes zeros from where they end up to a chunk past
// the record. Only a real file (*os.File) is preallocated; a test's wrapper
// gets plain appends, as do files whose zeros could not be written, so a
// failure here costs only the speed: the record is then appended.
func (w *journalWriter) preallocate(n int64) {
	need := w.activeSeg.size + n
	if w.preallocBytes <= 0 || need <= w.allocated {
		return
	}
	f, ok := w.active.(*os.File)
	if !ok {
		return
	}
	end := need + w.preallocBytes
	for at := w.allocated; at < end; {
		k := min(int64(len(zeros)), end-at)
		if _, err := f.WriteAt(zeros[:k], at); err != nil {
			return
		}
		at += k
		w.allocated = at
	}
}

// append writes ops as one record at the end of the active segment and
// fsyncs it, opening a segment first if there is none (opened). It
// returns the record's size. The cost is one write and one fsync of the
// record, however many offsets are stored.
//
// Crash safety: a record is acknowledged only after its fsync returned, and
// the next record is written only after that, so a crash can damage only
// the last record, which nobody was told is durable; Open cuts it off.
func (w *journalWriter) append(ops []*op) (n int, opened bool, err error) {
	if w.broken != nil {
		return 0, false, fmt.Errorf("%w: %w", ErrStorage, w.broken)
	}
	if w.active == nil {
		if err := w.openSegment(); err != nil {
			return 0, false, fmt.Errorf("%w: %w", ErrStorage, err)
		}
		opened = true
	}
	w.buf = appendRecord(w.buf[:0], ops)
	if cap(w.buf) > 1<<20 {
		defer func() { w.buf = nil }() // do not pin one huge batch's buffer
	}
	var start time.Time
	if w.observeSync != nil {
		start = time.Now()
	}
	w.preallocate(int64(len(w.buf)))
	if _, err := w.active.Write(w.buf); err != nil {
		return 0, opened, fmt.Errorf("%w: %w", ErrStorage, w.rewind(fmt.Errorf("write %s: %w", w.activeSeg.path, err)))
	}
	if err := syncData(w.active); err != nil {
		return 0, opened, fmt.Errorf("%w: %w", ErrStorage, w.rewind(fmt.Errorf("fsync %s: %w", w.activeSeg.path, err)))
	}
	if w.observeSync != nil {
		w.observeSync(time.Since(start))
	}
	w.activeSeg.size += int64(len(w.buf))
	w.allocated = max(w.allocated, w.activeSeg.size)
	return len(w.buf), opened, nil
}

// rewinder is what a segment file needs beyond atomicfile.File to take a
// failed write back. *os.File has both methods.
type rewinder interface {
	Truncate(size int64) error
	Seek(offset int64, whence int) (int64, error)
}

// rewind cuts a failed write (whole, partial or unsynced) off the active
// segment, so that the file holds exactly the acknowledged records, as
// memory does, and returns cause. The cut is made durable by the next
// successful fsync; a crash before that can at worst leave the failed
// record whole at the end of the journal, where replay applies it as if
// it had succeeded: its place in the order is the one it was validated
// in, and no acknowledged commit was ordered after it. If the cut itself
// fails, the file no longer matches memory, and the writer refuses every
// later op (ErrStorage) until the store is reopened.
func (w *journalWriter) rewind(cause error) error {
	rw, ok := w.active.(rewinder)
	if !ok {
		w.broken = fmt.Errorf("journal %s holds a failed write and cannot be truncated: %w", w.activeSeg.path, cause)
		return cause
	}
	err := rw.Truncate(w.activeSeg.size)
	w.allocated = w.activeSeg.size // the zeros went too
	if err == nil {
		_, err = rw.Seek(w.activeSeg.size, io.SeekStart)
	}
	if err != nil {
		w.broken = fmt.Errorf("journal %s holds a failed write: truncate: %w", w.activeSeg.path, err)
	}
	return cause
}

// openSegment creates the next journal segment and makes its name durable
// before any record goes into it: a temp file renamed into place, then a
// directory fsync, so a record fsynced into the segment can never be lost
// with the segment's directory entry. Any failure leaves no segment
// behind.
func (w *journalWriter) openSegment() error {
	seq := w.nextSeq
	w.nextSeq++
	path := segmentPath(w.dir, seq)
	f, err := w.fs.CreateTemp(w.dir, filepath.Base(path)+atomicfile.TempPattern)
	if err != nil {
		return fmt.Errorf("create temp file for %s: %w", path, err)
	}
	tmp := f.Name()
	if err := w.fs.Rename(tmp, path); err != nil {
		_ = f.Close()
		_ = w.fs.Remove(tmp)
		return fmt.Errorf("rename %s to %s: %w", tmp, path, err)
	}
	if err := w.fs.SyncDir(w.dir); err != nil {
		// The empty segment may or may not survive a crash; either way
		// it holds nothing. Remove it so the directory says so.
		_ = f.Close()
		_ = w.fs.Remove(path)
		return fmt.Errorf("%w: %s: %w", atomicfile.ErrDirSync, w.dir, err)
	}
	w.active, w.activeSeg, w.allocated = f, segment{seq: seq, path: path}, 0
	return nil
}

// seal stops appending to the active segment and returns it (ok false
// with none); the next append opens a new one. Every record in it is
// already durable, so a failed close loses nothing and is ignored.
func (w *journalWriter) seal() (segment, bool) {
	if w.active == nil {
		return segment{}, false
	}
	_ = w.active.Close()
	w.active = nil
	return w.activeSeg, true
}
