package offsets

import (
	"bytes"
	"errors"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/minibroker/minibroker/internal/atomicfile"
)

// errInjected is what every injected failure returns unless a test picks
// another error.
var errInjected = errors.New("injected failure")

// step names one step of atomicfile.Write.
type step string

const (
	stepCreate  step = "create"
	stepWrite   step = "write"
	stepSync    step = "sync"
	stepClose   step = "close"
	stepRename  step = "rename"
	stepSyncDir step = "syncdir"
)

// The wrappers below are file systems a Store can write through.
var (
	_ atomicfile.FS = (*faultFS)(nil)
	_ atomicfile.FS = (*recordFS)(nil)
	_ atomicfile.FS = (*gateFS)(nil)
)

// faultFS is the real file system, except that while armed it fails one
// step of every write with err. It starts disarmed, so a store can be
// opened through it before the fault is switched on.
type faultFS struct {
	step  step
	err   error
	armed atomic.Bool
}

// newFaultFS returns a disarmed faultFS failing s with errInjected.
func newFaultFS(s step) *faultFS {
	return &faultFS{step: s, err: errInjected}
}

func (f *faultFS) arm()    { f.armed.Store(true) }
func (f *faultFS) disarm() { f.armed.Store(false) }

func (f *faultFS) fails(s step) bool { return f.step == s && f.armed.Load() }

func (f *faultFS) CreateTemp(dir, pattern string) (atomicfile.File, error) {
	if f.fails(stepCreate) {
		return nil, f.err
	}
	osf, err := os.CreateTemp(dir, pattern)
	if err != nil {
		return nil, err
	}
	return &faultFile{File: osf, fs: f}, nil
}

func (f *faultFS) Rename(oldpath, newpath string) error {
	if f.fails(stepRename) {
		return f.err
	}
	return os.Rename(oldpath, newpath)
}

func (f *faultFS) Remove(name string) error { return os.Remove(name) }

func (f *faultFS) SyncDir(dir string) error {
	if f.fails(stepSyncDir) {
		return f.err
	}
	return atomicfile.OS{}.SyncDir(dir)
}

// faultFile is a temp file created by faultFS.
type faultFile struct {
	*os.File
	fs *faultFS
}

// Write writes half of p before failing, as a full disk would.
func (f *faultFile) Write(p []byte) (int, error) {
	if f.fs.fails(stepWrite) {
		n, _ := f.File.Write(p[:len(p)/2])
		return n, f.fs.err
	}
	return f.File.Write(p)
}

func (f *faultFile) Sync() error {
	if f.fs.fails(stepSync) {
		return f.fs.err
	}
	return f.File.Sync()
}

// Close always closes the real file, so a failed close leaks nothing.
func (f *faultFile) Close() error {
	err := f.File.Close()
	if f.fs.fails(stepClose) {
		return f.fs.err
	}
	return err
}

// recordFS passes everything to the real file system and records every
// write that reached the disk: the contents of each snapshot file it
// renames into place, and each journal record once its fsync returned.
// Renaming an empty journal segment into place writes no offsets and is
// not recorded.
type recordFS struct {
	atomicfile.OS

	mu     sync.Mutex
	writes [][]byte // guarded by mu
}

func (r *recordFS) CreateTemp(dir, pattern string) (atomicfile.File, error) {
	f, err := os.CreateTemp(dir, pattern)
	if err != nil {
		return nil, err
	}
	return &recordFile{File: f, fs: r}, nil
}

func (r *recordFS) Rename(oldpath, newpath string) error {
	data, err := os.ReadFile(oldpath)
	if err != nil {
		return err
	}
	if err := r.OS.Rename(oldpath, newpath); err != nil {
		return err
	}
	if filepath.Base(newpath) == FileName {
		r.record(data)
	}
	return nil
}

func (r *recordFS) record(data []byte) {
	r.mu.Lock()
	r.writes = append(r.writes, data)
	r.mu.Unlock()
}

// recordFile is a file created by recordFS: bytes written to a journal
// segment are recorded when the fsync that makes them durable returns.
type recordFile struct {
	*os.File
	fs       *recordFS
	unsynced []byte
}

func (f *recordFile) Write(p []byte) (int, error) {
	n, err := f.File.Write(p)
	f.unsynced = append(f.unsynced, p[:n]...)
	return n, err
}

func (f *recordFile) Sync() error {
	if err := f.File.Sync(); err != nil {
		return err
	}
	if strings.HasPrefix(filepath.Base(f.Name()), JournalPrefix) && len(f.unsynced) > 0 {
		f.fs.record(f.unsynced)
	}
	f.unsynced = nil
	return nil
}

// count returns how many writes reached the disk so far.
func (r *recordFS) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.writes)
}

// written returns the contents of every write after the first skip ones.
func (r *recordFS) written(skip int) [][]byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.writes[skip:])
}

// states returns what the disk held after each write from the first
// skip+1 on: a snapshot write replaces the offsets, a journal record adds
// its commits to what the disk held before it.
func (r *recordFS) states(t *testing.T, skip int) []table {
	t.Helper()
	var out []table
	state := table{}
	for _, data := range r.written(0) {
		if tb, err := decode(data); err == nil {
			state = tb
		} else {
			next := cloneTable(state)
			payload, rest, err := nextRecord(data)
			require.NoError(t, err, "a recorded write is a snapshot or one journal record")
			require.Empty(t, rest)
			require.NoError(t, decodeRecord(payload, next.apply))
			state = next
		}
		out = append(out, state)
	}
	return out[skip:]
}

// cloneTable returns a deep copy of t.
func cloneTable(t table) table {
	out := make(table, len(t))
	for g, entries := range t {
		out[g] = maps.Clone(entries)
	}
	return out
}

// sealActive makes the next commit open a new journal segment, as a
// compaction does: it takes the writer's role while it seals.
func sealActive(t *testing.T, s *Store) {
	t.Helper()
	s.sealAsWriter()
}

func (s *Store) sealAsWriter() {
	s.mu.Lock()
	for s.writing {
		s.idle.Wait()
	}
	s.writing = true
	s.mu.Unlock()
	s.seal()
	s.mu.Lock()
	s.writing = false
	s.idle.Broadcast()
	s.mu.Unlock()
}

// gateFS passes everything to FS, except that the first CreateTemp after
// arm closes entered and blocks until release.
type gateFS struct {
	atomicfile.FS

	armed   atomic.Bool
	entered chan struct{}
	release chan struct{}
	once    sync.Once
}

func newGateFS(base atomicfile.FS) *gateFS {
	return &gateFS{FS: base, entered: make(chan struct{}), release: make(chan struct{})}
}

// arm makes the next CreateTemp block. Call it after the store is open: the
// cleanup it registers then runs before the store's Close, so a failing
// test never leaves a writer blocked with the write lock held.
func (g *gateFS) arm(t *testing.T) {
	t.Helper()
	g.armed.Store(true)
	t.Cleanup(g.open)
}

// open releases the blocked CreateTemp, if any. Safe to call twice.
func (g *gateFS) open() { g.once.Do(func() { close(g.release) }) }

func (g *gateFS) CreateTemp(dir, pattern string) (atomicfile.File, error) {
	if g.armed.CompareAndSwap(true, false) {
		close(g.entered)
		<-g.release
	}
	return g.FS.CreateTemp(dir, pattern)
}

// waitFor fails the test unless ch is closed or yields within a generous
// deadline; it only guards against hanging the whole test binary.
func waitFor[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
		var zero T
		return zero
	}
}

// rec returns the bytes of one journal record holding ops, in order.
func rec(ops ...*op) []byte { return appendRecord(nil, ops) }

// commitOf returns the op of a commit of entries to group.
func commitOf(group string, entries ...Entry) *op {
	return &op{kind: opCommit, group: group, entries: entries}
}

// deleteOf returns the op of a delete of group's keys (none: all of them).
func deleteOf(group string, keys ...Key) *op {
	return &op{kind: opDelete, group: group, keys: keys}
}

// writeSegment writes data as segment seq of dir and returns its path.
func writeSegment(t *testing.T, dir string, seq uint64, data []byte) string {
	t.Helper()
	path := segmentPath(dir, seq)
	require.NoError(t, os.WriteFile(path, data, 0o644))
	return path
}

// inline runs a fold at once, in the writer, instead of in a goroutine, so
// that a test sees one deterministic order of file operations.
func inline(fold func()) { fold() }

// openInline opens a store whose folds run inline, and closes it when the
// test ends.
func openInline(t *testing.T, cfg Config) *Store {
	t.Helper()
	s, err := open(cfg, inline)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// logBuffer collects what a store logs, as text lines.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// newLogger returns a logger writing every level to a new logBuffer.
func newLogger() (*slog.Logger, *logBuffer) {
	lb := &logBuffer{}
	return slog.New(slog.NewTextHandler(lb, &slog.HandlerOptions{Level: slog.LevelDebug})), lb
}

// ent returns an entry without metadata or leader epoch, as the chapter's
// file holds them.
func ent(topic string, partition int32, offset int64) Entry {
	return Entry{Topic: topic, Partition: partition, Offset: offset, LeaderEpoch: NoLeaderEpoch}
}

// openStore opens a file store in dir through fsys (nil: the real file
// system) and closes it when the test ends.
func openStore(t *testing.T, dir string, fsys atomicfile.FS) *Store {
	t.Helper()
	s, err := Open(Config{Dir: dir, FS: fsys})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	return s
}

// reopen returns every group's committed offsets as a restarted store
// would load them from dir: offsets.json, then the journal replayed over
// it. It changes no file (it cuts no torn tail and folds nothing), so a
// store may still be running in dir.
func reopen(t *testing.T, dir string) map[string][]Entry {
	t.Helper()
	scan, err := scanDir(dir)
	require.NoError(t, err)
	tb, _, exists, err := load(filepath.Join(dir, FileName))
	require.NoError(t, err)
	require.True(t, exists || len(scan.segments) == 0, "a journal without offsets.json")
	for i, seg := range scan.segments {
		_, _, err := replaySegment(seg.path, i == len(scan.segments)-1, tb.apply)
		require.NoError(t, err)
	}
	out := map[string][]Entry{}
	for _, g := range tb.groups() {
		out[g] = tb.sorted(g)
	}
	return out
}

// offsetReader is what snapshot reads: a Store or a Memory.
type offsetReader interface {
	Groups() []string
	Committed(group string) []Entry
}

// snapshot returns every group's committed offsets.
func snapshot(s offsetReader) map[string][]Entry {
	out := map[string][]Entry{}
	for _, g := range s.Groups() {
		out[g] = s.Committed(g)
	}
	return out
}

// writeOffsets writes data as dir's offsets file and returns its path.
func writeOffsets(t *testing.T, dir string, data []byte) string {
	t.Helper()
	path := filepath.Join(dir, FileName)
	require.NoError(t, os.WriteFile(path, data, 0o644))
	return path
}

// readOffsets returns the bytes of dir's offsets file.
func readOffsets(t *testing.T, dir string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, FileName))
	require.NoError(t, err)
	return data
}

// readTestdata returns the bytes of testdata/name.
func readTestdata(t testing.TB, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	require.NoError(t, err)
	return data
}

// dirNames returns the sorted names in dir: a failed write must leave no
// temp file behind.
func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	names := make([]string, len(entries))
	for i, e := range entries {
		names[i] = e.Name()
	}
	return names
}

// encodeStore renders s's committed offsets as the file store writes them.
func encodeStore(s *Store) []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return encode(s.committed, nil)
}
