package offsets

import (
	"errors"
	"log/slog"
	"slices"
	"sync"
	"time"

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
	// segments. Required. The caller holds its lock (datadir.Lock) for as
	// long as the store is open.
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
	// Logger receives the store's events: at Info the temp files Open
	// removes, at Warn each torn tail it cuts, at Error refused commits
	// and failed folds, at most one line per kind per LogInterval.
	// Default: discard.
	Logger *slog.Logger
}

// Stats counts what a Store did since it was opened. /metrics and the live
// page show them.
type Stats struct {
	Commits       int64 // commits made durable and applied
	Deletes       int64 // Delete, DeleteOffsets and Expire calls made durable and applied
	Appends       int64 // journal records written: one per group commit
	JournalBytes  int64 // bytes of journal not yet folded into offsets.json
	Segments      int   // journal segments not yet folded into offsets.json
	SnapshotBytes int64 // size of offsets.json as last loaded or written
	Compactions   int64 // background folds of the journal into offsets.json
	// RefusedCommits counts commits and deletes that failed for a storage
	// failure (ErrStorage; KAFKA_STORAGE_ERROR on the wire).
	RefusedCommits int64
	// FailedFolds counts failed folds, in the background or at Close. A
	// failed fold loses nothing: the journal it would have replaced stays.
	FailedFolds   int64
	LastFoldError error
	CutTails      int64 // torn journal tails Open cut off (and kept as .cut-<n>)
	// TempFilesRemoved counts leftover temp files Open removed.
	TempFilesRemoved int64
}

// Store holds committed offsets in memory, in offsets.json and in an
// append-only journal. It is safe for concurrent use.
//
// Group commit: Enqueue (and each delete) adds an op to the open batch
// under mu. A waiter wakes the writer goroutine (writer.go), which takes
// the open batch, writes it as one journal record with one write and one
// fsync, applies it to committed, and closes the batch's done channel:
// exactly the batch's waiters wake. Meanwhile new ops gather in the next
// open batch. mu is never held across I/O.
//
// The journal's writing end (w, a journalWriter) is used only by whoever
// set writing (the writer goroutine, or Close once the writer stopped);
// writing hands it over under mu. A fold (compact.go) touches only files that no writer appends
// to any more, and the fields guarded by mu.
type Store struct {
	path         string // offsets.json
	dir          string
	fs           atomicfile.FS
	compactBytes int64
	log          *slog.Logger
	events       *rateLog
	// runFold runs one fold: in a goroutine tracked by folds (Open), or at
	// once in the writer (tests, for one order of file operations).
	runFold func(fold func())
	folds   sync.WaitGroup

	mu            sync.Mutex
	idle          sync.Cond // L is &mu; broadcast when writing turns false
	committed     table     // guarded by mu; exactly what the files hold
	open          *batch    // ops enqueued and not yet taken by the writer
	writing       bool      // someone holds the writer-owned fields
	closed        bool      // no new ops
	sealed        []segment // segments no longer appended to, not folded yet, in order
	snapshotBytes int64
	compacting    bool  // a fold of sealed is running
	retryAt       int64 // after a failed fold: journal size of the next attempt
	stats         Stats

	// w is the journal's writing end, used only by whoever set writing
	// (journal_writer.go).
	w *journalWriter

	// Writer goroutine lifecycle: started by the first wait.
	writerOnce sync.Once
	wake       chan struct{} // capacity 1: a batch waits for the writer
	writerStop chan struct{}
	writerDone chan struct{}
}

// batch is the ops that share one journal record. err is written before
// done is closed and read after.
type batch struct {
	ops  []*op
	done chan struct{}
	err  error
	wait func() error // s.wait(b): one function for every op of the batch
}

// Path returns the offsets file's path.
func (s *Store) Path() string { return s.path }

// Enqueue fixes the position of a commit in the store's order and returns a
// function that waits until it is durable. Commits and deletes become
// durable, and visible to readers, in the order they were enqueued. The
// entries are validated first (Validate, and the group must be UTF-8); a
// rejected commit is never enqueued, and a commit of no entries has
// nothing to write. Enqueue never blocks on I/O.
func (s *Store) Enqueue(group string, entries []Entry) (wait func() error) {
	return s.enqueue(commitOp(group, entries))
}

// Delete removes every committed offset of group (Kafka's DeleteGroups),
// ordered with commits and other deletes exactly as Enqueue orders them;
// the journal holds it as a tombstone, so it survives a restart and a fold.
func (s *Store) Delete(group string) (wait func() error) {
	return s.enqueue(deleteOp(group))
}

// DeleteOffsets removes group's committed offsets of keys (Kafka's
// OffsetDelete), ordered as Enqueue orders commits. No keys: nothing to
// do.
func (s *Store) DeleteOffsets(group string, keys []Key) (wait func() error) {
	return s.enqueue(deleteOffsetsOp(group, keys))
}

// Expire removes group's committed offsets whose commit time is known and
// at or before cutoff, ordered as Enqueue orders commits: Kafka's
// retention sweep (GroupMetadata.removeExpiredOffsets, with cutoff = now -
// offsets.retention.minutes), which the caller runs for the groups it
// chooses (Kafka: Empty groups). Which entries go is decided when the
// expiry is applied, so a commit ordered before it with a newer time
// stays. Entries without a commit time never expire.
func (s *Store) Expire(group string, cutoff time.Time) (wait func() error) {
	return s.enqueue(expireOp(group, cutoff))
}

// Commit enqueues entries and waits until they are durable.
func (s *Store) Commit(group string, entries []Entry) error {
	return s.Enqueue(group, entries)()
}

// enqueue adds o to the open batch.
func (s *Store) enqueue(o *op, err error) func() error {
	if err != nil {
		return func() error { return err }
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return func() error { return ErrClosed }
	}
	if o == nil {
		s.mu.Unlock()
		return func() error { return nil }
	}
	b := s.open
	if b == nil {
		b = &batch{done: make(chan struct{})}
		b.wait = func() error { return s.wait(b) }
		s.open = b
	}
	b.ops = append(b.ops, o)
	s.mu.Unlock()
	return b.wait
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

// Close makes every enqueued op durable, then refuses new ones, waits for
// a fold in progress, and folds the whole journal into offsets.json, the
// journal left by an earlier run included: after a clean Close,
// offsets.json alone holds every acknowledged commit and no segment
// remains (docs/design.md section 6). It is idempotent and returns the first
// error of the final write and the fold, if any. The commits are durable
// either way.
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
	s.stopWriter()
	s.folds.Wait()
	if ferr := s.foldOnClose(); err == nil {
		err = ferr
	}
	return err
}
