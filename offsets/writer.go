package offsets

import (
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"runtime"
	"time"

	"github.com/minibroker/minibroker/internal/atomicfile"
)

// The write loop: one goroutine, started by the first wait and stopped by
// Close, takes the open batch, makes it durable as one journal record and
// applies it. Every field it uses beyond mu's is writer-owned (store.go).

// wait returns once b is durable or failed. Nothing is written until
// someone waits, so ops enqueued together share a record.
func (s *Store) wait(b *batch) error {
	select {
	case <-b.done:
		return b.err
	default:
	}
	s.writerOnce.Do(func() {
		s.wake, s.writerStop, s.writerDone = make(chan struct{}, 1), make(chan struct{}), make(chan struct{})
		go s.writeLoop()
	})
	select {
	case s.wake <- struct{}{}:
	default: // the writer is awake already
	}
	<-b.done
	return b.err
}

// writeLoop is the writer goroutine: each time it is woken it writes
// every open batch, one after the other, until none is left.
func (s *Store) writeLoop() {
	defer close(s.writerDone)
	for {
		select {
		case <-s.writerStop:
			return
		case <-s.wake:
		}
		for {
			s.gather()
			s.mu.Lock()
			for s.writing { // a test or Close holds the writer's role
				s.idle.Wait()
			}
			b := s.open
			s.open = nil
			s.writing = b != nil
			s.mu.Unlock()
			if b == nil {
				break
			}
			s.writeBatch(b)
			s.mu.Lock()
			s.writing = false
			s.idle.Broadcast()
			s.mu.Unlock()
		}
	}
}

// stopWriter waits for a batch mid-write, then stops the writer: after
// Close's last wait nothing can be enqueued, so once the writer is idle it
// stays idle, and once it stopped the writer-owned fields are the
// caller's.
func (s *Store) stopWriter() {
	s.mu.Lock()
	for s.writing {
		s.idle.Wait()
	}
	s.mu.Unlock()
	s.writerOnce.Do(func() {}) // orders us after a start of the writer; no start after this
	if s.writerStop != nil {
		close(s.writerStop)
		<-s.writerDone
	}
}

// gather yields the processor while the open batch keeps growing, a few
// times at most: request goroutines that are already runnable get to add
// their ops before the batch is taken.
func (s *Store) gather() {
	n := -1
	for range 4 {
		s.mu.Lock()
		m := 0
		if s.open != nil {
			m = len(s.open.ops)
		}
		s.mu.Unlock()
		if m == n {
			return
		}
		n = m
		runtime.Gosched()
	}
}

// writeBatch makes b durable as one journal record, then applies it and
// closes b.done. On failure nothing of it is applied and every op in it
// gets the error. Called by the writer.
func (s *Store) writeBatch(b *batch) {
	err := s.append(b.ops)
	s.mu.Lock()
	if err == nil {
		for _, o := range b.ops {
			s.committed.apply(o)
			if o.kind == opCommit {
				s.stats.Commits++
			} else {
				s.stats.Deletes++
			}
		}
	} else {
		s.stats.RefusedCommits += int64(len(b.ops))
	}
	s.mu.Unlock()
	b.err = err
	close(b.done)
	if err != nil {
		s.events.logAs("refused", slog.LevelError, "commits refused: offsets storage failure",
			"err", err, "commits", len(b.ops))
		return
	}
	s.maybeCompact()
}

// append writes ops as one record at the end of the active segment and
// fsyncs it, opening a segment first if there is none. Called by the
// writer. The cost is one write and one fsync of the record, however many
// offsets are stored.
//
// Crash safety: a record is acknowledged only after its fsync returned, and
// the next record is written only after that, so a crash can damage only
// the last record, which nobody was told is durable; Open cuts it off.
func (s *Store) append(ops []*op) error {
	if s.broken != nil {
		return fmt.Errorf("%w: %w", ErrStorage, s.broken)
	}
	if s.active == nil {
		if err := s.openSegment(); err != nil {
			return fmt.Errorf("%w: %w", ErrStorage, err)
		}
	}
	s.buf = appendRecord(s.buf[:0], ops)
	if cap(s.buf) > 1<<20 {
		defer func() { s.buf = nil }() // do not pin one huge batch's buffer
	}
	var start time.Time
	if s.observeSync != nil {
		start = time.Now()
	}
	if _, err := s.active.Write(s.buf); err != nil {
		return fmt.Errorf("%w: %w", ErrStorage, s.rewind(fmt.Errorf("write %s: %w", s.activeSeg.path, err)))
	}
	if err := syncData(s.active); err != nil {
		return fmt.Errorf("%w: %w", ErrStorage, s.rewind(fmt.Errorf("fsync %s: %w", s.activeSeg.path, err)))
	}
	if s.observeSync != nil {
		s.observeSync(time.Since(start))
	}
	s.activeSeg.size += int64(len(s.buf))
	s.mu.Lock()
	s.stats.Appends++
	s.stats.JournalBytes += int64(len(s.buf))
	s.mu.Unlock()
	return nil
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
// fails, the file no longer matches memory, and the store refuses every
// later op (ErrStorage) until it is reopened.
func (s *Store) rewind(cause error) error {
	rw, ok := s.active.(rewinder)
	if !ok {
		s.broken = fmt.Errorf("journal %s holds a failed write and cannot be truncated: %w", s.activeSeg.path, cause)
		return cause
	}
	err := rw.Truncate(s.activeSeg.size)
	if err == nil {
		_, err = rw.Seek(s.activeSeg.size, io.SeekStart)
	}
	if err != nil {
		s.broken = fmt.Errorf("journal %s holds a failed write: truncate: %w", s.activeSeg.path, err)
	}
	return cause
}

// openSegment creates the next journal segment and makes its name durable
// before any record goes into it: a temp file renamed into place, then a
// directory fsync, so a record fsynced into the segment can never be lost
// with the segment's directory entry. Any failure leaves no segment
// behind. Called by the writer.
func (s *Store) openSegment() error {
	seq := s.nextSeq
	s.nextSeq++
	path := segmentPath(s.dir, seq)
	f, err := s.fs.CreateTemp(s.dir, filepath.Base(path)+atomicfile.TempPattern)
	if err != nil {
		return fmt.Errorf("create temp file for %s: %w", path, err)
	}
	tmp := f.Name()
	if err := s.fs.Rename(tmp, path); err != nil {
		_ = f.Close()
		_ = s.fs.Remove(tmp)
		return fmt.Errorf("rename %s to %s: %w", tmp, path, err)
	}
	if err := s.fs.SyncDir(s.dir); err != nil {
		// The empty segment may or may not survive a crash; either way
		// it holds nothing. Remove it so the directory says so.
		_ = f.Close()
		_ = s.fs.Remove(path)
		return fmt.Errorf("%w: %s: %w", atomicfile.ErrDirSync, s.dir, err)
	}
	s.active, s.activeSeg = f, segment{seq: seq, path: path}
	s.mu.Lock()
	s.stats.Segments++
	s.mu.Unlock()
	return nil
}

// seal stops appending to the active segment; the next commit opens a new
// one. Every record in it is already durable, so a failed close loses
// nothing and is ignored. Called by the writer.
func (s *Store) seal() {
	if s.active == nil {
		return
	}
	_ = s.active.Close()
	s.active = nil
	s.mu.Lock()
	s.sealed = append(s.sealed, s.activeSeg)
	s.mu.Unlock()
}
