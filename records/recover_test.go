package records

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// fixture is a log on disk written by a test and closed, to be damaged
// and reopened.
type fixture struct {
	dir     string
	pdir    string   // the partition directory of t-0
	batches [][]byte // every batch as stored, in order
	segs    []string // segment file names, oldest first
	sizes   []int64  // their sizes
}

// writeFixture writes n batches to t-0 with segments of segmentBytes.
func writeFixture(t *testing.T, n int, segmentBytes int64) *fixture {
	t.Helper()
	cfg := testConfig(t, t.TempDir())
	cfg.SegmentBytes = segmentBytes
	l, err := openAnyPID(cfg)
	require.NoError(t, err)
	require.NoError(t, l.CreatePartitions("t", 1))
	fx := &fixture{dir: cfg.Dir, pdir: filepath.Join(cfg.Dir, "t-0")}
	seq := int32(0)
	for i := range n {
		k := 1 + i%3
		raw := build(t, spec{n: k, value: 100, pid: 42, seq: seq, idem: true})
		seq += int32(k)
		a := produce(t, l, "t", 0, raw)
		fx.batches = append(fx.batches, withBase(raw, a.BaseOffset))
	}
	require.NoError(t, l.Close())
	fx.segs = segmentFiles(t, fx.pdir)
	for _, s := range fx.segs {
		fx.sizes = append(fx.sizes, fileSize(t, filepath.Join(fx.pdir, s)))
	}
	return fx
}

func (fx *fixture) path(i int) string { return filepath.Join(fx.pdir, fx.segs[i]) }

func (fx *fixture) newest() string { return fx.path(len(fx.segs) - 1) }

// end is the log end offset of the fixture.
func (fx *fixture) end() int64 {
	h := parseHeader(fx.batches[len(fx.batches)-1])
	return h.nextOffset()
}

// reopen opens the fixture's directory with a logger the test can read.
func (fx *fixture) reopen(t *testing.T) (*Log, *testLogger, error) {
	logger, logs := newTestLogger(t)
	cfg := testConfig(t, fx.dir)
	cfg.Logger = logger
	l, err := openAnyPID(cfg)
	if err == nil {
		t.Cleanup(func() { _ = l.Close() })
	}
	return l, logs, err
}

func appendFile(t *testing.T, path string, data []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	require.NoError(t, err)
	_, err = f.Write(data)
	require.NoError(t, err)
	require.NoError(t, f.Close())
}

func flipByte(t *testing.T, path string, at int64) {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	data[at] ^= 0x40
	require.NoError(t, os.WriteFile(path, data, 0o644))
}

// TestRecoverTornTail cuts a partial batch off the newest segment: the
// log keeps every whole batch, the bytes cut are kept beside the segment,
// a Warn names the file, the byte range, the batches kept and the bytes
// cut, and appends continue at the old end.
func TestRecoverTornTail(t *testing.T) {
	t.Parallel()
	fx := writeFixture(t, 30, 2048)
	require.Greater(t, len(fx.segs), 2)
	torn := build(t, spec{n: 2, value: 300})[:150]
	appendFile(t, fx.newest(), torn)

	l, logs, err := fx.reopen(t)
	require.NoError(t, err)
	require.Equal(t, fx.batches, readAll(t, l, "t", 0))
	newest := fx.sizes[len(fx.sizes)-1]
	require.Equal(t, newest, fileSize(t, fx.newest()))
	cut, err := os.ReadFile(fx.newest() + ".cut-1")
	require.NoError(t, err)
	require.Equal(t, torn, cut)
	warns := logs.find(slog.LevelWarn, "torn tail")
	require.Len(t, warns, 1)
	require.Contains(t, warns[0], "file="+fx.newest())
	require.Contains(t, warns[0], "from="+itoa64(newest))
	require.Contains(t, warns[0], "to="+itoa64(newest+150))
	require.Contains(t, warns[0], "bytes=150")
	require.Empty(t, logs.find(slog.LevelError, ""))
	require.Equal(t, int64(1), l.Stats().CutTails)

	a := produce(t, l, "t", 0, build(t, spec{pid: 42, seq: 60, idem: true}))
	require.Equal(t, fx.end(), a.BaseOffset)
}

func itoa64(n int64) string { return strconv.FormatInt(n, 10) }

// TestRecoverZeroTail truncates a zero-filled tail silently: zeros from a
// batch boundary to the end of the newest segment are space allocated
// ahead of writes that never came (prealloc.go), or a file that grew
// while its data never reached the disk; neither held anything
// acknowledged. No .cut file, no Warn, no cut tail counted.
func TestRecoverZeroTail(t *testing.T) {
	t.Parallel()
	fx := writeFixture(t, 5, DefaultSegmentBytes)
	appendFile(t, fx.newest(), make([]byte, 4096))
	l, logs, err := fx.reopen(t)
	require.NoError(t, err)
	require.Equal(t, fx.batches, readAll(t, l, "t", 0))
	require.Empty(t, logsAbout(logs, slog.LevelWarn, fx.newest()))
	require.Empty(t, logs.find(slog.LevelError, ""))
	require.Zero(t, l.Stats().CutTails)
	require.NoFileExists(t, fx.newest()+".cut-1")
	require.Equal(t, fx.sizes[0], fileSize(t, fx.newest()))
}

// TestRecoverCorruptLastBatch flips a bit in the newest segment's last
// batch: it is cut and kept, and logged at Error as corruption, never
// dropped silently.
func TestRecoverCorruptLastBatch(t *testing.T) {
	t.Parallel()
	fx := writeFixture(t, 6, DefaultSegmentBytes)
	last := fx.batches[len(fx.batches)-1]
	at := fx.sizes[0] - int64(len(last))
	flipByte(t, fx.newest(), at+int64(len(last))-3)
	before, err := os.ReadFile(fx.newest())
	require.NoError(t, err)

	// The clean Close checkpointed the batch as acknowledged: cutting it
	// would lose it, so Open refuses and changes nothing.
	_, _, err = fx.reopen(t)
	require.ErrorIs(t, err, ErrDataLoss)
	require.ErrorContains(t, err, fmt.Sprintf("partition t-0: %s at byte %d: stored crc", fx.newest(), at))
	require.ErrorContains(t, err, fmt.Sprintf("offsets up to %d were acknowledged", fx.end()))
	after, err := os.ReadFile(fx.newest())
	require.NoError(t, err)
	require.Equal(t, before, after)
	require.NoFileExists(t, fx.newest()+".cut-1")

	// After a crash no checkpoint covers the last batch: it is cut.
	require.NoError(t, os.Remove(filepath.Join(fx.dir, checkpointFile)))
	l, logs, err := fx.reopen(t)
	require.NoError(t, err)
	require.Equal(t, fx.batches[:5], readAll(t, l, "t", 0))
	errs := logs.find(slog.LevelError, "corrupt batch")
	require.Len(t, errs, 1)
	require.Contains(t, errs[0], "crc")
	require.Contains(t, errs[0], "batches=5")
	cut, err := os.ReadFile(fx.newest() + ".cut-1")
	require.NoError(t, err)
	require.Len(t, cut, len(last))
	require.Equal(t, at, fileSize(t, fx.newest()))
}

// TestRecoverDamageBeforeGoodBatch flips a bit in a batch that valid
// batches follow: not a torn write, so Open stops, naming the file and
// byte, and changes nothing.
func TestRecoverDamageBeforeGoodBatch(t *testing.T) {
	t.Parallel()
	fx := writeFixture(t, 6, DefaultSegmentBytes)
	second := int64(len(fx.batches[0]))
	flipByte(t, fx.newest(), second+70)
	before, err := os.ReadFile(fx.newest())
	require.NoError(t, err)
	_, _, err = fx.reopen(t)
	require.ErrorIs(t, err, ErrCorrupt)
	require.ErrorContains(t, err, fx.newest())
	require.ErrorContains(t, err, "at byte "+itoa64(second))
	after, err := os.ReadFile(fx.newest())
	require.NoError(t, err)
	require.Equal(t, before, after)
	require.NoFileExists(t, fx.newest()+".cut-1")
}

// TestRecoverDamageInOlderSegment breaks a header in a segment that is
// not the newest: Open stops, naming the file and the byte.
func TestRecoverDamageInOlderSegment(t *testing.T) {
	t.Parallel()
	for name, damage := range map[string]func(path string, at int64){
		"magic":  func(path string, at int64) { flipByte(t, path, at+offMagic) },
		"length": func(path string, at int64) { flipByte(t, path, at+offLength) },
		"torn": func(path string, at int64) {
			require.NoError(t, os.Truncate(path, at+30))
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			fx := writeFixture(t, 30, 2048)
			first := int64(len(fx.batches[0]))
			damage(fx.path(0), first)
			_, _, err := fx.reopen(t)
			require.ErrorIs(t, err, ErrCorrupt)
			require.ErrorContains(t, err, fx.path(0)+" at byte "+itoa64(first))
		})
	}
}

// TestRecoverGapBetweenSegments removes a middle segment: the offsets
// would jump, which is corruption.
func TestRecoverGapBetweenSegments(t *testing.T) {
	t.Parallel()
	fx := writeFixture(t, 30, 2048)
	require.NoError(t, os.Remove(fx.path(1)))
	_, _, err := fx.reopen(t)
	require.ErrorIs(t, err, ErrCorrupt)
	require.ErrorContains(t, err, fx.path(2))
}

// TestRecoverNotRegularFile puts a symlink, a FIFO and a directory where
// the newest segment should be: Open stops with a clear error and the
// symlink's target is untouched.
func TestRecoverNotRegularFile(t *testing.T) {
	t.Parallel()
	for _, kind := range []string{"symlink", "fifo", "dir"} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			fx := writeFixture(t, 3, DefaultSegmentBytes)
			target := filepath.Join(t.TempDir(), "target")
			data, err := os.ReadFile(fx.newest())
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(target, append(data, 1, 2, 3), 0o644))
			require.NoError(t, os.Remove(fx.newest()))
			switch kind {
			case "symlink":
				require.NoError(t, os.Symlink(target, fx.newest()))
			case "fifo":
				require.NoError(t, syscall.Mkfifo(fx.newest(), 0o644))
			case "dir":
				require.NoError(t, os.Mkdir(fx.newest(), 0o755))
			}
			_, _, err = fx.reopen(t)
			require.ErrorIs(t, err, ErrCorrupt)
			require.ErrorContains(t, err, fx.newest())
			require.ErrorContains(t, err, "not a regular file")
			got, err := os.ReadFile(target)
			require.NoError(t, err)
			require.Equal(t, append(data, 1, 2, 3), got, "symlink target untouched")
		})
	}
}

// TestRecoverSymlinkRace checks OpenFile itself, past the directory
// listing: a symlink is refused without following it.
func TestRecoverSymlinkRace(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	target := filepath.Join(dir, "target")
	require.NoError(t, os.WriteFile(target, []byte("x"), 0o644))
	link := filepath.Join(dir, "link")
	require.NoError(t, os.Symlink(target, link))
	_, _, err := osFS{}.OpenFile(link, false)
	require.ErrorIs(t, err, errNotRegular)
	_, _, err = osFS{}.OpenFile(link, true)
	require.Error(t, err)
}

// TestRecoverStrayFiles ignores and logs names that are neither
// partitions nor segments, and keeps earlier cut files quietly.
func TestRecoverStrayFiles(t *testing.T) {
	t.Parallel()
	fx := writeFixture(t, 3, DefaultSegmentBytes)
	require.NoError(t, os.WriteFile(filepath.Join(fx.pdir, "notes.txt"), nil, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(fx.pdir, "00000000000000000000.index"), nil, 0o644))
	require.NoError(t, os.WriteFile(fx.newest()+".cut-1", []byte("old"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(fx.dir, "junk"), nil, 0o644))
	require.NoError(t, os.Mkdir(filepath.Join(fx.dir, "no_partition_number"), 0o755))
	require.NoError(t, os.Mkdir(filepath.Join(fx.dir, "t-01"), 0o755))
	l, logs, err := fx.reopen(t)
	require.NoError(t, err)
	require.Equal(t, fx.batches, readAll(t, l, "t", 0))
	require.Equal(t, []TopicPartition{{"t", 0}}, l.Partitions())
	warns := logs.find(slog.LevelWarn, "ignoring")
	require.Len(t, warns, 5, "%q", warns)
	for _, name := range []string{"notes.txt", ".index", "junk", "no_partition_number", "t-01"} {
		require.Contains(t, strings.Join(warns, "\n"), name)
	}
}

// TestRecoverPartitionNotADirectory refuses a partition name that is a
// file.
func TestRecoverPartitionNotADirectory(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "t-3"), nil, 0o644))
	_, err := Open(testConfig(t, dir))
	require.ErrorIs(t, err, ErrCorrupt)
	require.ErrorContains(t, err, "t-3")
}

// TestRecoverEmptyPartitionDir restarts a partition whose directory lost
// (or never got) its first segment: it starts empty.
func TestRecoverEmptyPartitionDir(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	require.NoError(t, os.Mkdir(filepath.Join(dir, "t-0"), 0o755))
	l := open(t, testConfig(t, dir))
	require.Equal(t, []TopicPartition{{"t", 0}}, l.Partitions())
	a := produce(t, l, "t", 0, build(t, spec{}))
	require.Zero(t, a.BaseOffset)
}

// TestRecoverEmptyNewestSegment keeps an empty newest segment, what a
// crash right after a roll leaves.
func TestRecoverEmptyNewestSegment(t *testing.T) {
	t.Parallel()
	fx := writeFixture(t, 3, DefaultSegmentBytes)
	empty := filepath.Join(fx.pdir, segmentName(fx.end()))
	require.NoError(t, os.WriteFile(empty, nil, 0o644))
	l, _, err := fx.reopen(t)
	require.NoError(t, err)
	a := produce(t, l, "t", 0, build(t, spec{pid: 42, seq: 6, idem: true}))
	require.Equal(t, fx.end(), a.BaseOffset)
	require.Greater(t, fileSize(t, empty), int64(0))
}

// TestRecoverCutTwice keeps each cut in its own file.
func TestRecoverCutTwice(t *testing.T) {
	t.Parallel()
	fx := writeFixture(t, 2, DefaultSegmentBytes)
	for i := range 2 {
		appendFile(t, fx.newest(), []byte{byte(i), 1, 2})
		l, _, err := fx.reopen(t)
		require.NoError(t, err)
		require.NoError(t, l.Close())
	}
	for i, name := range []string{".cut-1", ".cut-2"} {
		data, err := os.ReadFile(fx.newest() + name)
		require.NoError(t, err)
		require.Equal(t, []byte{byte(i), 1, 2}, data)
	}
}

// FuzzRecoverSegment opens a partition whose only segment holds arbitrary
// bytes. Properties: no panic; Open fails only with ErrCorrupt; when it
// succeeds the log is consistent (every batch reads back with contiguous
// offsets up to the high watermark, and an append lands right after it).
// The seed corpus, in testdata/fuzz/FuzzRecoverSegment, has a sound
// segment, torn and zero-filled tails, flipped bits at the end and in the
// middle, and a length field of 2^31.
func FuzzRecoverSegment(f *testing.F) {
	f.Fuzz(func(t *testing.T, seg []byte) {
		dir := t.TempDir()
		pdir := filepath.Join(dir, "t-0")
		if err := os.Mkdir(pdir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(pdir, segmentName(0)), seg, 0o644); err != nil {
			t.Fatal(err)
		}
		l, err := Open(Config{Dir: dir})
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("Open failed without ErrCorrupt: %v", err)
			}
			return
		}
		defer l.Close()
		start, hw, err := l.Offsets("t", 0)
		if err != nil || start != 0 {
			t.Fatalf("offsets %d, %d, %v", start, hw, err)
		}
		next := int64(0)
		for _, b := range readAll(t, l, "t", 0) {
			h := parseHeader(b)
			if h.baseOffset != next {
				t.Fatalf("batch at %d, want %d", h.baseOffset, next)
			}
			next = h.nextOffset()
		}
		if next != hw {
			t.Fatalf("batches end at %d, high watermark %d", next, hw)
		}
		b, err := l.Validate(build(t, spec{}))
		if err != nil {
			t.Fatal(err)
		}
		p, err := l.Append("t", 0, b)
		if err != nil {
			t.Fatal(err)
		}
		a, err := p.Wait()
		if err != nil || a.BaseOffset != hw {
			t.Fatalf("append at %d, %v; want %d", a.BaseOffset, err, hw)
		}
	})
}
