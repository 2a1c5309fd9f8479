package offsets

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/minibroker/minibroker/internal/atomicfile"
)

// errCrashed is what every file system call returns once crashFS crashed.
var errCrashed = errors.New("crashed")

// crashFS is the real file system until its crash: the call numbered
// crashAt (counting every call on the file system and on the files it
// created) does not happen, except that a Write writes half its bytes, as
// a crash in the middle of a write would; every later call fails. After
// the crash, powerLoss undoes what a power failure may undo: bytes written
// to a file since its last fsync, and renames and removals in the
// directory since the directory's last fsync.
type crashFS struct {
	mu      sync.Mutex
	ops     int
	crashAt int // 0: never
	crashed bool
	files   map[string]*crashFile // by current path
	undo    []func()              // directory changes since the last SyncDir
}

func newCrashFS(crashAt int) *crashFS {
	return &crashFS{crashAt: crashAt, files: map[string]*crashFile{}}
}

// op counts one call and reports whether it may happen.
func (c *crashFS) op() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.crashed {
		return false
	}
	c.ops++
	if c.ops == c.crashAt {
		c.crashed = true
		return false
	}
	return true
}

func (c *crashFS) CreateTemp(dir, pattern string) (atomicfile.File, error) {
	if !c.op() {
		return nil, errCrashed
	}
	f, err := os.CreateTemp(dir, pattern)
	if err != nil {
		return nil, err
	}
	cf := &crashFile{File: f, fs: c, path: f.Name()}
	c.mu.Lock()
	c.files[cf.path] = cf
	c.mu.Unlock()
	return cf, nil
}

func (c *crashFS) Rename(oldpath, newpath string) error {
	if !c.op() {
		return errCrashed
	}
	prev, prevErr := os.ReadFile(newpath)
	if err := os.Rename(oldpath, newpath); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if f := c.files[oldpath]; f != nil {
		delete(c.files, oldpath)
		f.path = newpath
		c.files[newpath] = f
	}
	c.undo = append(c.undo, func() {
		if prevErr == nil {
			_ = os.WriteFile(newpath, prev, 0o644)
		} else {
			_ = os.Remove(newpath)
		}
	})
	return nil
}

func (c *crashFS) Remove(name string) error {
	if !c.op() {
		return errCrashed
	}
	prev, prevErr := os.ReadFile(name)
	if err := os.Remove(name); err != nil {
		return err
	}
	if prevErr == nil {
		c.mu.Lock()
		c.undo = append(c.undo, func() { _ = os.WriteFile(name, prev, 0o644) })
		c.mu.Unlock()
	}
	return nil
}

func (c *crashFS) SyncDir(dir string) error {
	if !c.op() {
		return errCrashed
	}
	if err := (atomicfile.OS{}).SyncDir(dir); err != nil {
		return err
	}
	c.mu.Lock()
	c.undo = nil
	c.mu.Unlock()
	return nil
}

// powerLoss undoes the directory changes made since the last SyncDir,
// newest first, then cuts every file back to what its last fsync made
// durable.
func (c *crashFS) powerLoss() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := len(c.undo) - 1; i >= 0; i-- {
		c.undo[i]()
	}
	for path, f := range c.files {
		if fi, err := os.Stat(path); err == nil && fi.Size() > f.synced {
			_ = os.Truncate(path, f.synced)
		}
	}
}

// crashFile is a file created by crashFS.
type crashFile struct {
	*os.File
	fs     *crashFS
	path   string // guarded by fs.mu
	size   int64  // bytes written
	synced int64  // guarded by fs.mu: bytes made durable by the last fsync
}

func (f *crashFile) Write(p []byte) (int, error) {
	if !f.fs.op() {
		if f.fs.crashAt == f.fs.ops { // this is the call that crashed
			n, _ := f.File.Write(p[:len(p)/2])
			f.size += int64(n)
		}
		return 0, errCrashed
	}
	n, err := f.File.Write(p)
	f.size += int64(n)
	return n, err
}

func (f *crashFile) Sync() error {
	if !f.fs.op() {
		return errCrashed
	}
	if err := f.File.Sync(); err != nil {
		return err
	}
	f.fs.mu.Lock()
	f.synced = f.size
	f.fs.mu.Unlock()
	return nil
}

func (f *crashFile) Truncate(size int64) error {
	if !f.fs.op() {
		return errCrashed
	}
	if err := f.File.Truncate(size); err != nil {
		return err
	}
	f.size = size
	f.fs.mu.Lock()
	f.synced = min(f.synced, size)
	f.fs.mu.Unlock()
	return nil
}

func (f *crashFile) Seek(offset int64, whence int) (int64, error) {
	if !f.fs.op() {
		return 0, errCrashed
	}
	return f.File.Seek(offset, whence)
}

func (f *crashFile) Close() error {
	if !f.fs.op() {
		_ = f.File.Close() // the process is gone: the descriptor goes too
		return errCrashed
	}
	return f.File.Close()
}

// history records, per group and partition, every offset a workload tried
// to commit and the last one acknowledged.
type history struct {
	tried map[string]map[int64]bool // "group/partition" -> offsets
	acked map[string]int64
}

func newHistory() *history {
	return &history{tried: map[string]map[int64]bool{}, acked: map[string]int64{}}
}

func (h *history) key(group string, e Entry) string { return fmt.Sprintf("%s/%d", group, e.Partition) }

func (h *history) try(group string, entries []Entry) {
	for _, e := range entries {
		k := h.key(group, e)
		if h.tried[k] == nil {
			h.tried[k] = map[int64]bool{}
		}
		h.tried[k][e.Offset] = true
	}
}

func (h *history) ack(group string, entries []Entry) {
	for _, e := range entries {
		h.acked[h.key(group, e)] = e.Offset
	}
}

// check opens dir as a restarted broker would and checks that every
// acknowledged commit survived: for each partition, the offset found is
// the last one acknowledged or one tried after it (a commit whose write
// reached the disk before its acknowledgement could), and nothing else.
// Then it closes the store, as a clean stop after the restart: offsets.json
// alone must hold what was found, with no journal segment left.
func (h *history) check(t *testing.T, dir string) {
	t.Helper()
	found := checkCleanStop(t, dir)
	offsets := map[string]int64{}
	for g, entries := range found {
		for _, e := range entries {
			offsets[h.key(g, e)] = e.Offset
		}
	}
	for k, acked := range h.acked {
		got, ok := offsets[k]
		require.True(t, ok, "acknowledged %s=%d lost", k, acked)
		require.GreaterOrEqual(t, got, acked, "acknowledged %s=%d went back to %d", k, acked, got)
	}
	for k, got := range offsets {
		require.True(t, h.tried[k][got], "%s=%d was never committed", k, got)
	}
}

// checkCleanStop opens dir after a crash, returns what it holds, and
// closes it with no new commit: offsets.json alone must then hold exactly
// that, and no segment or temp file may be left.
func checkCleanStop(t *testing.T, dir string) map[string][]Entry {
	t.Helper()
	s, err := Open(Config{Dir: dir})
	require.NoError(t, err, "the files load after the crash")
	found := snapshot(s)
	require.NoError(t, s.Close())
	var left []string
	for _, n := range dirNames(t, dir) {
		if !strings.Contains(n, ".cut-") {
			left = append(left, n)
		}
	}
	require.Equal(t, []string{FileName}, left, "a clean stop leaves offsets.json alone")
	snap, _, _, err := load(filepath.Join(dir, FileName))
	require.NoError(t, err)
	alone := map[string][]Entry{}
	for _, g := range snap.groups() {
		alone[g] = snap.sorted(g)
	}
	require.Equal(t, found, alone, "offsets.json alone holds everything")
	return found
}

// serial records a workload that runs one op at a time: the state after
// each op it tried, and how many were acknowledged. After a crash the
// directory must hold the state after the last acknowledged op, or after
// the one tried after it (its write may have reached the disk before the
// crash); nothing else.
type serial struct {
	states []table // states[i]: after the first i ops
	acked  int
}

func newSerial() *serial { return &serial{states: []table{{}}} }

func (h *serial) try(o *op) {
	next := cloneTable(h.states[len(h.states)-1])
	next.apply(o)
	h.states = append(h.states, next)
}

func (h *serial) ack() { h.acked = len(h.states) - 1 }

func (h *serial) check(t *testing.T, dir string) {
	t.Helper()
	found := checkCleanStop(t, dir)
	for i := h.acked; i < len(h.states); i++ {
		want := map[string][]Entry{}
		for _, g := range h.states[i].groups() {
			want[g] = h.states[i].sorted(g)
		}
		if assert.ObjectsAreEqual(want, found) {
			return
		}
	}
	t.Fatalf("after %d acknowledged ops of %d tried, the directory holds %v", h.acked, len(h.states)-1, found)
}

// crashWorkload commits increasing offsets to two groups and four
// partitions, and deletes a partition, a group and expired offsets on the
// way, with a tiny compaction threshold and a segment sealed every third
// round, so that segments are opened, sealed, folded several at a time and
// removed many times, with tombstones in them; then it closes the store.
// It stops at the first error: after a crash every call fails.
func crashWorkload(fsys atomicfile.FS, dir string, h *serial) {
	s, err := open(Config{Dir: dir, FS: fsys, CompactBytes: 160}, inline)
	if err != nil {
		return
	}
	defer func() { _ = s.Close() }()
	do := func(o *op, wait func() error) bool {
		h.try(o)
		if wait() != nil {
			return false
		}
		h.ack()
		return true
	}
	for i := int64(1); i <= 14; i++ {
		for _, group := range []string{"billing", "shipping"} {
			entries := []Entry{{Topic: "orders", Partition: int32(i % 3), Offset: i, LeaderEpoch: NoLeaderEpoch, CommitTimestampMs: 1000 * i}}
			if i%4 == 0 {
				entries = append(entries, Entry{Topic: "orders", Partition: 3, Offset: i, Metadata: "m", LeaderEpoch: 2, CommitTimestampMs: 1000 * i})
			}
			if !do(commitOf(group, entries...), s.Enqueue(group, entries)) {
				return
			}
		}
		var ok bool
		switch i {
		case 5:
			k := Key{Topic: "orders", Partition: 3}
			ok = do(deleteOf("billing", k), s.DeleteOffsets("billing", []Key{k}))
		case 9:
			ok = do(deleteOf("shipping"), s.Delete("shipping"))
		case 12:
			cutoff := time.UnixMilli(10_500)
			ok = do(&op{kind: opDelete, group: "billing", expireMs: cutoff.UnixMilli()}, s.Expire("billing", cutoff))
		default:
			ok = true
		}
		if !ok {
			return
		}
		if i%3 == 0 {
			s.sealAsWriter()
		}
	}
}

// TestCrashAtEveryStep crashes the workload at every file system call in
// turn, once as a killed process (everything written stays) and once as a
// power failure (what no fsync covered is undone), and checks that the
// directory always loads with every acknowledged commit.
func TestCrashAtEveryStep(t *testing.T) {
	t.Parallel()
	counter := newCrashFS(0)
	crashWorkload(counter, t.TempDir(), newSerial())
	total := counter.ops
	require.Greater(t, total, 90, "the workload opens, folds and removes many segments")

	for _, power := range []bool{false, true} {
		name := "kill"
		if power {
			name = "power"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			for k := 1; k <= total+1; k++ {
				dir := t.TempDir()
				fsys := newCrashFS(k)
				h := newSerial()
				crashWorkload(fsys, dir, h)
				if power {
					fsys.powerLoss()
				}
				t.Run(strconv.Itoa(k), func(t *testing.T) { h.check(t, dir) })
			}
		})
	}
}

// killChildEnv names the data directory of TestKillChild's process.
const killChildEnv = "OFFSETS_KILL_CHILD_DIR"

// TestKillChild is the process TestKillDuringCommits kills: four
// goroutines commit increasing offsets, continuing from what the directory
// holds, and print each commit before it starts and once it is
// acknowledged.
func TestKillChild(t *testing.T) {
	dir := os.Getenv(killChildEnv)
	if dir == "" {
		t.Skip("run by TestKillDuringCommits")
	}
	s, err := Open(Config{Dir: dir, CompactBytes: 2048})
	if err != nil {
		fmt.Println("open:", err)
		os.Exit(3)
	}
	var out sync.Mutex
	say := func(format string, args ...any) {
		out.Lock()
		fmt.Printf(format, args...)
		out.Unlock()
	}
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			group := fmt.Sprintf("g%d", w)
			var i int64
			for p := range int32(2) {
				if e, ok := s.Lookup(group, "orders", p); ok {
					i = max(i, e.Offset)
				}
			}
			for i++; ; i++ {
				entries := []Entry{ent("orders", int32(i%2), i)}
				say("try %s %d %d\n", group, i%2, i)
				if err := s.Commit(group, entries); err != nil {
					return
				}
				say("ack %s %d %d\n", group, i%2, i)
			}
		})
	}
	wg.Wait()
}

// TestKillDuringCommits kills a committing process with SIGKILL at random
// moments, several times on one directory (each child goes on from what
// the last one left, torn tail included), and checks after each kill that
// the directory loads with every commit any child acknowledged.
func TestKillDuringCommits(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	t.Parallel()
	dir := t.TempDir()
	h := newHistory()
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 5 {
		cmd := exec.Command(os.Args[0], "-test.run=^TestKillChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), killChildEnv+"="+dir)
		stdout, err := cmd.StdoutPipe()
		require.NoError(t, err)
		require.NoError(t, cmd.Start())
		lines := bufio.NewScanner(stdout)
		want := 50 + rng.IntN(400)
		acks := 0
		for acks < want && lines.Scan() {
			acks += h.parse(t, lines.Text())
		}
		require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
		for lines.Scan() { // lines written before the kill landed
			acks += h.parse(t, lines.Text())
		}
		_, _ = io.Copy(io.Discard, stdout)
		_ = cmd.Wait()
		require.Greater(t, acks, 0, "round %d: the child committed", round)
		h.check(t, dir)
	}
}

// parse records one "try|ack group partition offset" line of the child and
// returns 1 for an acknowledgement.
func (h *history) parse(t *testing.T, line string) int {
	t.Helper()
	f := strings.Fields(line)
	require.Len(t, f, 4, "child said %q", line)
	p, err := strconv.Atoi(f[2])
	require.NoError(t, err)
	o, err := strconv.ParseInt(f[3], 10, 64)
	require.NoError(t, err)
	entries := []Entry{ent("orders", int32(p), o)}
	switch f[0] {
	case "try":
		h.try(f[1], entries)
		return 0
	case "ack":
		h.ack(f[1], entries)
		return 1
	}
	t.Fatalf("child said %q", line)
	return 0
}
