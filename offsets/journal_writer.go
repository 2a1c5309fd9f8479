package offsets

import (
	"fmt"
	"io"
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
	w.active, w.activeSeg = f, segment{seq: seq, path: path}
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
