package offsets

import (
	"log/slog"
	"runtime"
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
// gets the error. Called by the writer. mu is taken once, after the
// write: to count the record and apply it.
func (s *Store) writeBatch(b *batch) {
	n, opened, err := s.w.append(b.ops)
	s.mu.Lock()
	if opened {
		s.stats.Segments++
	}
	if err == nil {
		s.stats.Appends++
		s.stats.JournalBytes += int64(n)
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

// seal stops appending to the active segment and hands it to the folds;
// the next commit opens a new one. Called by the writer.
func (s *Store) seal() {
	if seg, ok := s.w.seal(); ok {
		s.mu.Lock()
		s.sealed = append(s.sealed, seg)
		s.mu.Unlock()
	}
}
