package offsets

import (
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"unicode/utf8"

	"github.com/minibroker/minibroker/internal/atomicfile"
)

// ErrStorage wraps every failure to make a commit durable. Memory always
// holds what the file holds: when the write failed before the file was
// replaced, the commit is not applied; when only the final directory fsync
// failed, the file already holds the commit, so memory does too, but its
// survival across a crash is unknown and the caller is told it failed.
var ErrStorage = errors.New("offsets storage failure")

// ErrClosed is returned for commits enqueued after Close.
var ErrClosed = errors.New("offsets store closed")

// Config configures a file-backed Store. Zero fields mean the default.
type Config struct {
	// Dir is the data directory that holds FileName. Required.
	Dir string
	// FS is the file system writes go through; default the real one.
	// Tests inject failures here.
	FS atomicfile.FS
}

// Store holds committed offsets in memory and, when file-backed, in the
// offsets file. It is safe for concurrent use.
//
// Lock order: writeMu before mu. writeMu is held by the one goroutine that
// is writing the file; mu guards the fields below it and is never held
// across I/O.
type Store struct {
	path string // "" for a memory-only store
	fs   atomicfile.FS

	writeMu sync.Mutex

	mu        sync.Mutex
	committed table // what the file holds; mutated only with writeMu held too
	queue     []*pending
	closed    bool
}

// pending is one enqueued commit. done and err are written by the writer
// with writeMu held and read by the waiter with writeMu held.
type pending struct {
	group   string
	entries []Entry
	done    bool
	err     error
}

// NewMemory returns a Store that keeps offsets in memory only.
func NewMemory() *Store {
	return &Store{committed: table{}}
}

// Open loads <cfg.Dir>/offsets.json, or creates it empty when absent, so an
// unusable directory is reported at start and not at the first commit. A
// corrupt file is an error wrapping ErrCorrupt and naming the path; it is
// left untouched.
func Open(cfg Config) (*Store, error) {
	if cfg.Dir == "" {
		return nil, errors.New("offsets: Config.Dir is required")
	}
	if cfg.FS == nil {
		cfg.FS = atomicfile.OS{}
	}
	path := filepath.Join(cfg.Dir, FileName)
	t, exists, err := load(path)
	if err != nil {
		return nil, err
	}
	s := &Store{path: path, fs: cfg.FS, committed: t}
	if !exists {
		if err := atomicfile.Write(cfg.FS, path, encode(t, nil)); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrStorage, err)
		}
	}
	return s, nil
}

// Path returns the offsets file's path, or "" for a memory-only store.
func (s *Store) Path() string { return s.path }

// Enqueue fixes the position of a commit in the store's order and returns a
// function that waits until it is durable. Commits become durable, and
// visible to readers, in the order they were enqueued. The entries are
// validated first (negative offsets, oversized metadata); a rejected commit
// is never enqueued. Enqueue never blocks on I/O.
func (s *Store) Enqueue(group string, entries []Entry) (wait func() error) {
	err := Validate(entries)
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
	s.queue = append(s.queue, p)
	s.mu.Unlock()
	return func() error { return s.flush(p) }
}

// Commit enqueues entries and waits until they are durable.
func (s *Store) Commit(group string, entries []Entry) error {
	return s.Enqueue(group, entries)()
}

// flush makes p durable. The first waiter to get writeMu writes every
// commit queued so far in one file write and one fsync (group commit); the
// waiters behind it find their commit already done.
func (s *Store) flush(p *pending) error {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	if p.done {
		return p.err
	}
	s.mu.Lock()
	batch := s.queue
	s.queue = nil
	s.mu.Unlock()

	// Build the groups this batch changes beside the committed ones, so a
	// failed write leaves memory as it was. committed is only mutated with
	// writeMu held, which we hold, so reading it here needs no mu.
	changed := table{}
	for _, b := range batch {
		if changed[b.group] == nil {
			g := make(map[Key]Entry, len(s.committed[b.group])+len(b.entries))
			for k, e := range s.committed[b.group] {
				g[k] = e
			}
			changed[b.group] = g
		}
		changed.apply(b.group, b.entries)
	}
	var err error
	applied := true
	if s.path != "" {
		if werr := atomicfile.Write(s.fs, s.path, encode(s.committed, changed)); werr != nil {
			err = fmt.Errorf("%w: %w", ErrStorage, werr)
			applied = errors.Is(werr, atomicfile.ErrDirSync)
		}
	}
	if applied {
		s.mu.Lock()
		for group, g := range changed {
			s.committed[group] = g
		}
		s.mu.Unlock()
	}
	for _, b := range batch {
		b.done, b.err = true, err
	}
	return p.err
}

// Committed returns group's committed offsets sorted by topic and
// partition; nil when the group has none.
func (s *Store) Committed(group string) []Entry {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.committed[group]) == 0 {
		return nil
	}
	return s.committed.sorted(group)
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

// Close makes every enqueued commit durable, then refuses new ones. It is
// idempotent and returns the error of the final write, if any.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	var last *pending
	if n := len(s.queue); n > 0 {
		last = s.queue[n-1]
	}
	s.mu.Unlock()
	if last == nil {
		// A writer may hold the whole queue mid-write: wait for it.
		s.writeMu.Lock()
		s.writeMu.Unlock()
		return nil
	}
	return s.flush(last)
}
