package offsets

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/minibroker/minibroker/internal/atomicfile"
)

// ErrStorage wraps every failure to make a commit durable. Memory always
// holds what the files hold: a commit whose journal write failed is not
// applied, and the failed write is cut off the journal again.
var ErrStorage = errors.New("offsets storage failure")

// ErrClosed is returned for commits enqueued after Close.
var ErrClosed = errors.New("offsets store closed")

// DefaultCompactBytes is Config.CompactBytes's default: 4 MiB of journal.
const DefaultCompactBytes = 4 << 20

// Config configures a file-backed Store. Zero fields mean the default.
type Config struct {
	// Dir is the data directory that holds FileName and the journal
	// segments. Required.
	Dir string
	// FS is the file system writes go through; default the real one.
	// Tests inject failures here.
	FS atomicfile.FS
	// CompactBytes is how large the journal grows before a background
	// goroutine folds it into a new offsets.json, as Kafka's log cleaner
	// compacts __consumer_offsets (log.cleaner.* settings; here one
	// threshold). The effective threshold is never below the size of the
	// last snapshot, so rewriting the snapshot costs O(1) per journaled
	// byte however many offsets are stored. Default DefaultCompactBytes;
	// negative: only Close folds the journal.
	CompactBytes int64
	// ObserveSync, if set, is called after each journal write is durable
	// with the time its write and fsync took, from the goroutine that
	// wrote it. It must not block or call the store. Default: none.
	ObserveSync func(d time.Duration)
}

// Stats counts what a Store did since it was opened.
type Stats struct {
	Commits       int64 // commits made durable and applied
	Appends       int64 // journal records written: one per group commit
	JournalBytes  int64 // bytes of journal not yet folded into offsets.json
	SnapshotBytes int64 // size of offsets.json as last loaded or written
	Compactions   int64 // background folds of the journal into offsets.json
	// CompactionErrors counts failed background folds. A failed fold
	// loses nothing: the journal it would have replaced stays.
	CompactionErrors    int64
	LastCompactionError error
}

// Store holds committed offsets in memory and, when file-backed, in
// offsets.json plus an append-only journal. It is safe for concurrent use.
//
// Group commit: Enqueue adds a commit to the open batch under mu. A
// waiter wakes the writer goroutine (owned by the Store, started by the
// first wait, stopped by Close), which takes the open batch, writes it as
// one journal record with one write and one fsync, applies it to
// committed, and closes the batch's done channel: exactly the batch's
// waiters wake. Meanwhile new commits gather in the next open batch. mu is
// never held across I/O. A memory-only store has no writer: a waiter
// applies the open batch itself.
//
// The writer-owned fields are used only by whoever set writing (the writer
// goroutine, or Close once the writer stopped); writing hands them over
// under mu. The compactor goroutine touches only files that no writer
// appends to any more, and the fields guarded by mu.
type Store struct {
	path         string // offsets.json; "" for a memory-only store
	dir          string
	fs           atomicfile.FS
	compactBytes int64
	observeSync  func(time.Duration)

	mu            sync.Mutex
	idle          sync.Cond // L is &mu; broadcast when writing turns false
	committed     table     // guarded by mu; exactly what the files hold
	open          *batch    // commits enqueued and not yet taken by the writer
	writing       bool      // someone holds the writer-owned fields
	closed        bool      // no new commits
	sealed        []segment // segments no longer appended to, not folded yet, in order
	snapshotBytes int64
	compacting    bool  // a fold of sealed is running
	retryAt       int64 // after a failed fold: journal size of the next attempt
	stats         Stats

	// Writer-owned.
	active    atomicfile.File // the segment commits append to; nil until needed
	activeSeg segment
	nextSeq   uint64
	buf       []byte
	broken    error // a failed write could not be cut off: refuse commits
	created   bool  // we created a segment, so Close folds the journal

	// inlineCompact makes the writer fold the journal itself, so that
	// crash tests see one deterministic order of file operations. Set
	// only by tests, before the first commit.
	inlineCompact bool

	// Writer goroutine lifecycle: started by the first wait.
	writerOnce sync.Once
	wake       chan struct{} // capacity 1: a batch waits for the writer
	writerStop chan struct{}
	writerDone chan struct{}

	// Compactor lifecycle: created by the first writer that needs it.
	kick chan struct{}
	stop chan struct{}
	done chan struct{}
}

// pending is one enqueued commit.
type pending struct {
	group   string
	entries []Entry
}

// batch is the commits that share one journal record. err is written
// before done is closed and read after.
type batch struct {
	commits []*pending
	done    chan struct{}
	err     error
}

// NewMemory returns a Store that keeps offsets in memory only.
func NewMemory() *Store {
	s := &Store{committed: table{}}
	s.idle.L = &s.mu
	return s
}

// Open loads <cfg.Dir>/offsets.json, or creates it empty when absent, so an
// unusable directory is reported at start and not at the first commit, and
// then replays the journal segments over it. A corrupt file or segment is
// an error wrapping ErrCorrupt and naming the path; it is left untouched.
// The one repair Open makes is to cut a torn record off the end of the
// newest segment: a write that a crash interrupted, never acknowledged.
func Open(cfg Config) (*Store, error) {
	if cfg.Dir == "" {
		return nil, errors.New("offsets: Config.Dir is required")
	}
	if cfg.FS == nil {
		cfg.FS = atomicfile.OS{}
	}
	if cfg.CompactBytes == 0 {
		cfg.CompactBytes = DefaultCompactBytes
	}
	path := filepath.Join(cfg.Dir, FileName)
	t, exists, err := load(path)
	if err != nil {
		return nil, err
	}
	s := &Store{
		path: path, dir: cfg.Dir, fs: cfg.FS, committed: t,
		compactBytes: cfg.CompactBytes, observeSync: cfg.ObserveSync, nextSeq: 1,
	}
	s.idle.L = &s.mu
	if !exists {
		if segs, err := listSegments(cfg.Dir); err == nil && len(segs) > 0 {
			return nil, fmt.Errorf("%w %s: missing, but journal %s exists", ErrCorrupt, path, segs[0].path)
		}
		data := encode(t, nil)
		if err := atomicfile.Write(cfg.FS, path, data); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrStorage, err)
		}
		s.snapshotBytes = int64(len(data))
		s.stats.SnapshotBytes = s.snapshotBytes
		return s, nil
	}
	if fi, err := os.Stat(path); err == nil {
		s.snapshotBytes = fi.Size()
	}
	if err := s.replay(); err != nil {
		return nil, err
	}
	s.stats.SnapshotBytes = s.snapshotBytes
	return s, nil
}

// replay applies every journal segment, oldest first, over the snapshot.
// Replaying a record twice is harmless (each entry sets a value), which is
// what lets a fold remove segments only after the snapshot holding them is
// durable: between the two, both hold the same values.
func (s *Store) replay() error {
	segs, err := listSegments(s.dir)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrStorage, err)
	}
	for i := range segs {
		seg := &segs[i]
		valid, total, err := replaySegment(seg.path, i == len(segs)-1, s.committed.apply)
		if err != nil {
			return err
		}
		if valid < total {
			if err := truncateFile(seg.path, valid); err != nil {
				return fmt.Errorf("%w: cut torn record off %s: %w", ErrStorage, seg.path, err)
			}
		}
		seg.size = valid
		s.stats.JournalBytes += valid
		s.nextSeq = seg.seq + 1
	}
	s.sealed = segs
	return nil
}

// Path returns the offsets file's path, or "" for a memory-only store.
func (s *Store) Path() string { return s.path }

// Enqueue fixes the position of a commit in the store's order and returns a
// function that waits until it is durable. Commits become durable, and
// visible to readers, in the order they were enqueued. The entries are
// validated first (negative offsets, oversized metadata); a rejected commit
// is never enqueued, and a commit of no entries has nothing to write.
// Enqueue never blocks on I/O.
func (s *Store) Enqueue(group string, entries []Entry) (wait func() error) {
	err := Validate(entries, MaxMetadataBytes)
	if err == nil && !utf8.ValidString(group) {
		err = fmt.Errorf("%w: group %q", ErrInvalidEntry, group)
	}
	if err != nil {
		return func() error { return err }
	}
	p := &pending{group: group, entries: append([]Entry(nil), entries...)}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return func() error { return ErrClosed }
	}
	if len(entries) == 0 {
		s.mu.Unlock()
		return func() error { return nil }
	}
	b := s.open
	if b == nil {
		b = &batch{done: make(chan struct{})}
		s.open = b
	}
	b.commits = append(b.commits, p)
	s.mu.Unlock()
	return func() error { return s.wait(b) }
}

// Commit enqueues entries and waits until they are durable.
func (s *Store) Commit(group string, entries []Entry) error {
	return s.Enqueue(group, entries)()
}

// wait returns once b is durable or failed. Nothing is written until
// someone waits, so commits enqueued together share a record.
func (s *Store) wait(b *batch) error {
	select {
	case <-b.done:
		return b.err
	default:
	}
	if s.path == "" {
		s.applyMemory()
		<-b.done
		return b.err
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

// applyMemory applies the open batch of a memory-only store.
func (s *Store) applyMemory() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if b := s.open; b != nil {
		s.open = nil
		for _, p := range b.commits {
			s.committed.apply(p.group, p.entries)
		}
		s.stats.Commits += int64(len(b.commits))
		close(b.done)
	}
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

// gather yields the processor while the open batch keeps growing, a few
// times at most: request goroutines that are already runnable get to add
// their commits before the batch is taken.
func (s *Store) gather() {
	n := -1
	for range 4 {
		s.mu.Lock()
		m := 0
		if s.open != nil {
			m = len(s.open.commits)
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
// closes b.done. On failure nothing of it is applied and every commit in
// it gets the error. Called by the writer.
func (s *Store) writeBatch(b *batch) {
	err := s.append(b.commits)
	s.mu.Lock()
	if err == nil {
		for _, p := range b.commits {
			s.committed.apply(p.group, p.entries)
		}
		s.stats.Commits += int64(len(b.commits))
	}
	s.mu.Unlock()
	b.err = err
	close(b.done)
	if err == nil {
		s.maybeCompact()
	}
}

// Committed returns group's committed offsets sorted by topic and
// partition; nil when the group has none.
func (s *Store) Committed(group string) []Entry {
	s.mu.Lock()
	g := s.committed[group]
	if len(g) == 0 {
		s.mu.Unlock()
		return nil
	}
	out := make([]Entry, 0, len(g))
	for _, e := range g {
		out = append(out, e)
	}
	s.mu.Unlock()
	// Sort outside the lock: commits of a large group need not wait for it.
	slices.SortFunc(out, compareEntries)
	return out
}

// Lookup returns the committed offset of one partition.
func (s *Store) Lookup(group, topic string, partition int32) (Entry, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.committed.lookup(group, Key{Topic: topic, Partition: partition})
}

// Groups returns the sorted names of the groups with committed offsets.
func (s *Store) Groups() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.committed.groups()
}

// Stats returns the store's counters.
func (s *Store) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stats
}

// Close makes every enqueued commit durable, then refuses new ones, stops
// the compactor and, if this store wrote to the journal, folds the journal
// into offsets.json so that a cleanly stopped broker leaves the chapter's
// file alone. It is idempotent and returns the first error of the final
// write and the fold, if any. The commits are durable either way.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	last := s.open
	s.mu.Unlock()
	var err error
	if last != nil {
		err = s.wait(last)
	}
	if s.path == "" {
		return err
	}
	// The writer may hold a batch mid-write: wait for it. Nothing can be
	// enqueued any more, so once it is done the writer stays idle, and
	// after it stopped the writer-owned fields are ours.
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
	if s.stop != nil {
		close(s.stop)
		<-s.done
	}
	if ferr := s.foldOnClose(); err == nil {
		err = ferr
	}
	return err
}
