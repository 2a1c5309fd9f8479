package offsets

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/minibroker/minibroker/internal/datadir"
)

// emptyFile is what Open writes into a fresh data directory.
const emptyFile = "{\n  \"version\": 1,\n  \"groups\": {}\n}\n"

func TestOpenFreshDirCreatesEmptyFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := openStore(t, dir, nil)

	require.Equal(t, filepath.Join(dir, FileName), s.Path())
	require.Equal(t, emptyFile, string(readOffsets(t, dir)))
	require.Equal(t, []string{FileName}, dirNames(t, dir))
	require.Empty(t, s.Groups())
	require.Nil(t, s.Committed("billing"))
	require.Empty(t, reopen(t, dir))
}

func TestOpenFails(t *testing.T) {
	t.Parallel()
	missing := filepath.Join(t.TempDir(), "missing")
	tests := []struct {
		name    string
		dir     string
		wantIs  error
		wantMsg string
	}{
		{name: "no directory configured", dir: "", wantMsg: "Config.Dir is required"},
		{name: "missing directory", dir: missing, wantIs: ErrStorage, wantMsg: "read data dir " + missing},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s, err := Open(Config{Dir: tc.dir})
			require.Error(t, err)
			require.Nil(t, s)
			require.ErrorContains(t, err, tc.wantMsg)
			if tc.wantIs != nil {
				require.ErrorIs(t, err, tc.wantIs)
			}
		})
	}
	_, err := os.Stat(missing)
	require.ErrorIs(t, err, fs.ErrNotExist, "Open does not create the data directory")
}

func TestOpenFreshDirWriteFailure(t *testing.T) {
	t.Parallel()
	for _, st := range writeSteps {
		t.Run(string(st), func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			fsys := newFaultFS(st)
			fsys.arm()

			s, err := Open(Config{Dir: dir, FS: fsys})
			require.ErrorIs(t, err, ErrStorage)
			require.ErrorIs(t, err, errInjected)
			require.ErrorContains(t, err, stepMessage(st))
			require.Nil(t, s)
			require.Empty(t, dirNames(t, dir), "no offsets file and no temp file")
		})
	}
}

// TestOpenReplaysJournalOverSnapshot: segments replay in numeric order
// (1 before 2 before 10) over offsets.json, later values winning,
// tombstones included, and a segment of version 1 records (written before
// tombstones and commit times) still reads.
func TestOpenReplaysJournalOverSnapshot(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeOffsets(t, dir, readTestdata(t, "chapter-offsets.json")) // billing orders-0 = 6
	seg2 := rec(commitOf("billing", ent("orders", 0, 7), ent("orders", 1, 1)), commitOf("shipping", ent("orders", 0, 3)), commitOf("audit", ent("orders", 0, 1)))
	seg10 := rec(commitOf("billing", ent("orders", 0, 9)), deleteOf("audit"), deleteOf("shipping", Key{Topic: "orders", Partition: 9}))
	seg1 := v1Record(commitOf("billing", ent("orders", 0, 99)), commitOf("legacy", ent("orders", 0, 5)))
	writeSegment(t, dir, 10, seg10)
	writeSegment(t, dir, 2, seg2)
	writeSegment(t, dir, 1, seg1)
	// Neither of these is a segment.
	require.NoError(t, os.WriteFile(filepath.Join(dir, JournalPrefix+"011"), []byte("garbage"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, JournalPrefix+"x1"), []byte("garbage"), 0o644))

	s := openStore(t, dir, nil)
	want := map[string][]Entry{
		"billing":  {ent("orders", 0, 9), ent("orders", 1, 1)},
		"shipping": {ent("orders", 0, 3)},
		"legacy":   {ent("orders", 0, 5)},
	}
	require.Equal(t, want, snapshot(s))
	st := s.Stats()
	require.Equal(t, int64(len(seg1)+len(seg2)+len(seg10)), st.JournalBytes)
	require.Equal(t, 3, st.Segments)

	// The next segment follows the highest one found.
	require.NoError(t, s.Commit("billing", []Entry{ent("orders", 0, 10)}))
	require.FileExists(t, segmentPath(dir, 11))
	require.Equal(t, "garbage", string(must(os.ReadFile(filepath.Join(dir, JournalPrefix+"011")))))
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// TestOpenCutsTornTail: bytes at the end of the newest segment that do not
// form a whole record (a record cut short, or one whose bytes are zeros
// from a sector boundary on) were never acknowledged; Open cuts them off,
// keeps the torn write's bytes beside the segment as .cut-1, logs it at
// Warn with the byte range, counts it, and the store goes on appending.
func TestOpenCutsTornTail(t *testing.T) {
	t.Parallel()
	first := rec(commitOf("billing", ent("orders", 0, 6)))
	second := rec(commitOf("billing", ent("orders", 0, 7)), commitOf("shipping", ent("orders", 1, 2)))
	// spanning spans the sector boundary at 512 when it starts after
	// first; torn at the boundary, with preallocated zeros after it.
	spanning := rec(commitOf("billing", Entry{Topic: "orders", Offset: 7, Metadata: strings.Repeat("m", 600), LeaderEpoch: 1}))
	tornSpanning := bytes.Clone(spanning)
	clear(tornSpanning[sectorBytes-len(first):])
	tests := map[string]struct{ tail, saved []byte }{
		"header cut short":  {tail: second[:5]},
		"payload cut short": {tail: second[:len(second)-2]},
		"garbage tail":      {tail: []byte("\x00\x00\x10\x00partial")},
		"torn at a sector boundary, preallocated zeros after": {
			tail: append(bytes.Clone(tornSpanning), make([]byte, 4096)...), saved: tornSpanning},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if tc.saved == nil {
				tc.saved = tc.tail
			}
			dir := t.TempDir()
			writeOffsets(t, dir, []byte(emptyFile))
			path := writeSegment(t, dir, 1, append(bytes.Clone(first), tc.tail...))
			logger, logs := newLogger()

			s, err := Open(Config{Dir: dir, Logger: logger})
			require.NoError(t, err)
			t.Cleanup(func() { require.NoError(t, s.Close()) })
			require.Equal(t, map[string][]Entry{"billing": {ent("orders", 0, 6)}}, snapshot(s))
			require.Equal(t, first, must(os.ReadFile(path)), "the torn record is cut off")
			require.Equal(t, tc.saved, must(os.ReadFile(path+".cut-1")), "and kept beside the segment")
			require.Equal(t, int64(1), s.Stats().CutTails)
			require.Contains(t, logs.String(), fmt.Sprintf(`level=WARN msg="cut torn journal tail" path=%s from=%d to=%d bytes=%d saved=%s.cut-1`,
				path, len(first), len(first)+len(tc.saved), len(tc.saved), path))

			require.NoError(t, s.Commit("billing", []Entry{ent("orders", 0, 8)}))
			require.Equal(t, map[string][]Entry{"billing": {ent("orders", 0, 8)}}, reopen(t, dir))
		})
	}
}

// TestZerosEndASegment: zeros from a record boundary to the end of a
// segment, newest or sealed, are space the writer filled ahead of its
// records: Open replays the records before them, cuts nothing, logs
// nothing at Warn and leaves every file as it was.
func TestZerosEndASegment(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeOffsets(t, dir, []byte(emptyFile))
	sealed := append(rec(commitOf("billing", ent("orders", 0, 6))), make([]byte, 8192)...)
	newest := append(rec(commitOf("billing", ent("orders", 0, 7)), commitOf("shipping", ent("orders", 1, 2))), make([]byte, 100)...)
	paths := []string{writeSegment(t, dir, 1, sealed), writeSegment(t, dir, 2, newest)}
	logger, logs := newLogger()

	s, err := Open(Config{Dir: dir, Logger: logger})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	require.Equal(t, map[string][]Entry{
		"billing":  {ent("orders", 0, 7)},
		"shipping": {ent("orders", 1, 2)},
	}, snapshot(s))
	require.Equal(t, sealed, must(os.ReadFile(paths[0])), "nothing is cut")
	require.Equal(t, newest, must(os.ReadFile(paths[1])), "nothing is cut")
	require.Zero(t, s.Stats().CutTails)
	require.Equal(t, int64(len(sealed)-8192+len(newest)-100), s.Stats().JournalBytes, "only the records count")
	require.NotContains(t, logs.String(), "level=WARN")
}

// TestOpenRefusesBitRotInTheLastRecord: a record that is all there but
// fails its checksum is damage to a write that was acknowledged, not a
// torn write, even at the very end of the newest segment. Open fails
// naming the file, the byte offset and what to do; nothing is cut.
func TestOpenRefusesBitRotInTheLastRecord(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeOffsets(t, dir, []byte(emptyFile))
	first := rec(commitOf("billing", ent("orders", 0, 6)))
	last := rec(commitOf("billing", ent("orders", 0, 7)))
	last[recordHeaderBytes+3] ^= 0x01
	data := append(bytes.Clone(first), last...)
	path := writeSegment(t, dir, 1, data)

	s, err := Open(Config{Dir: dir})
	require.Nil(t, s)
	require.ErrorIs(t, err, ErrCorrupt)
	require.ErrorContains(t, err, fmt.Sprintf("%s: record at byte %d: checksum mismatch", path, len(first)))
	require.ErrorContains(t, err, "not a torn write")
	require.ErrorContains(t, err, fmt.Sprintf("truncate -s %d %s", len(first), path))
	require.ErrorContains(t, err, "move the segment out of the data directory")
	require.Equal(t, data, must(os.ReadFile(path)), "nothing is cut")
	require.Equal(t, []string{filepath.Base(path), FileName}, dirNames(t, dir))
}

// TestOpenRejectsCorruptJournal: damage that a torn write cannot explain
// (an intact record after it, or damage in a segment that is not the
// newest) is corruption of durable data: Open fails naming the path and
// leaves every file as it was.
func TestOpenRejectsCorruptJournal(t *testing.T) {
	t.Parallel()
	one := rec(commitOf("billing", ent("orders", 0, 6)))
	two := rec(commitOf("billing", ent("orders", 0, 7)))
	three := rec(commitOf("billing", ent("orders", 0, 8)))
	flip := func(b []byte, i int) []byte {
		out := bytes.Clone(b)
		out[i] ^= 0x40
		return out
	}
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	undecodable := func() []byte {
		payload := []byte{recordVersion, 1, byte(opCommit), 1, 'g', 5} // five entries, none there
		out := binary.BigEndian.AppendUint32(nil, uint32(len(payload)))
		out = binary.BigEndian.AppendUint32(out, crcOf(payload))
		return append(out, payload...)
	}()
	tests := []struct {
		name     string
		segments [][]byte // segment 1, 2, ...
		bad      int      // index of the segment named in the error
	}{
		{name: "flipped payload byte before intact records", segments: [][]byte{cat(flip(one, recordHeaderBytes+2), two, three)}},
		{name: "flipped length before an intact record", segments: [][]byte{cat(flip(one, 3), two)}},
		{name: "torn tail of an older segment", segments: [][]byte{cat(one, two[:4]), three}},
		{name: "checksum-valid record that does not decode", segments: [][]byte{cat(one, undecodable)}},
		{name: "undecodable record in an older segment", segments: [][]byte{undecodable, one}},
		{name: "impossible length at the end that is not zeros", segments: [][]byte{cat(one, []byte{0xff, 0xff, 0xff, 0xff, 1, 2, 3, 4, 5})}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			writeOffsets(t, dir, []byte(emptyFile))
			var paths []string
			for i, data := range tc.segments {
				paths = append(paths, writeSegment(t, dir, uint64(i+1), data))
			}
			before := dirNames(t, dir)

			s, err := Open(Config{Dir: dir})
			require.ErrorIs(t, err, ErrCorrupt)
			require.ErrorContains(t, err, paths[tc.bad]+": record at byte ")
			require.Nil(t, s)
			require.Equal(t, before, dirNames(t, dir))
			for i, data := range tc.segments {
				require.Equal(t, data, must(os.ReadFile(paths[i])), "segment %d is left byte for byte", i+1)
			}
		})
	}
}

// TestOpenJournalWithoutSnapshot: offsets.json is written before any
// segment exists and only ever replaced atomically, so segments without it
// mean someone removed it: the segments alone would be a partial state.
func TestOpenJournalWithoutSnapshot(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := writeSegment(t, dir, 1, rec(commitOf("billing", ent("orders", 0, 6))))
	s, err := Open(Config{Dir: dir})
	require.ErrorIs(t, err, ErrCorrupt)
	require.ErrorContains(t, err, filepath.Join(dir, FileName))
	require.ErrorContains(t, err, path)
	require.Nil(t, s)
	require.Equal(t, []string{filepath.Base(path)}, dirNames(t, dir))
}

// TestOpenRefusesSymlinks: offsets.json or a journal segment that is a
// symbolic link is never followed, truncated or written through, even when
// the link's target has a torn tail that Open would otherwise cut: Open
// stops naming the link, and the target stays byte for byte.
func TestOpenRefusesSymlinks(t *testing.T) {
	t.Parallel()
	good := rec(commitOf("billing", ent("orders", 0, 6)))
	tests := []struct {
		name   string
		link   string // in the data dir
		target []byte
	}{
		{"offsets.json", FileName, []byte(emptyFile)},
		{"newest segment with a torn tail", JournalPrefix + "2", append(bytes.Clone(good), 0, 0, 0x10)},
		{"older segment", JournalPrefix + "1", good},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			writeOffsets(t, dir, []byte(emptyFile))
			writeSegment(t, dir, 1, good)
			writeSegment(t, dir, 2, good)
			target := filepath.Join(t.TempDir(), "target")
			require.NoError(t, os.WriteFile(target, tc.target, 0o644))
			link := filepath.Join(dir, tc.link)
			require.NoError(t, os.Remove(link))
			require.NoError(t, os.Symlink(target, link))

			s, err := Open(Config{Dir: dir})
			require.Nil(t, s)
			require.ErrorIs(t, err, datadir.ErrNotRegular)
			require.ErrorContains(t, err, link+" is a symbolic link")
			require.ErrorContains(t, err, "move it out of the data directory")
			require.Equal(t, tc.target, must(os.ReadFile(target)), "the target is byte for byte as it was")
			fi, err := os.Lstat(link)
			require.NoError(t, err)
			require.Equal(t, fs.ModeSymlink, fi.Mode().Type(), "the link is left in place")
		})
	}
}

// TestOpenFIFOOffsetsFile: a FIFO named offsets.json does not hang Open.
func TestOpenFIFOOffsetsFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, FileName)
	require.NoError(t, syscall.Mkfifo(path, 0o644))
	done := make(chan error, 1)
	go func() {
		s, err := Open(Config{Dir: dir})
		if s != nil {
			_ = s.Close()
		}
		done <- err
	}()
	err := waitFor(t, done, "Open to return")
	require.ErrorIs(t, err, datadir.ErrNotRegular)
	require.ErrorContains(t, err, path+" is a FIFO")
}

// TestOpenRemovesLeftoverTempFiles: temp files that a kill during a fold or
// a segment's creation left are removed at Open, logged at Info by name;
// only regular files with our temp names go. A temp file never counts as
// the offsets file.
func TestOpenRemovesLeftoverTempFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeOffsets(t, dir, readTestdata(t, "chapter-offsets.json"))
	newer := `{"version":1,"groups":{"billing":[{"topic":"orders","partition":0,"offset":99}]}}`
	temps := map[string]string{
		FileName + ".tmp-123":           newer,
		FileName + ".tmp-456":           "",
		JournalPrefix + "7.tmp-9":       "",
		JournalPrefix + "1.cut-1.tmp-5": "\x00",
	}
	for name, data := range temps {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644))
	}
	kept := []string{"topics.json.tmp-1", FileName + ".tmp-dir", FileName + ".tmp-link"}
	require.NoError(t, os.WriteFile(filepath.Join(dir, kept[0]), nil, 0o644))
	require.NoError(t, os.Mkdir(filepath.Join(dir, kept[1]), 0o755))
	require.NoError(t, os.Symlink(filepath.Join(dir, FileName), filepath.Join(dir, kept[2])))
	logger, logs := newLogger()

	s, err := Open(Config{Dir: dir, Logger: logger})
	require.NoError(t, err)
	require.Equal(t, map[string][]Entry{"billing": {ent("orders", 0, 6)}}, snapshot(s), "a temp file is not the offsets file")
	require.Equal(t, int64(len(temps)), s.Stats().TempFilesRemoved)
	require.ElementsMatch(t, append([]string{FileName}, kept...), dirNames(t, dir))
	require.Contains(t, logs.String(), `level=INFO msg="removed leftover temp files" dir=`+dir+` files="[`)
	for name := range temps {
		require.Contains(t, logs.String(), name)
	}
	require.NoError(t, s.Close())

	t.Run("only a temp file", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		require.NoError(t, os.WriteFile(filepath.Join(dir, FileName+".tmp-123"), []byte(newer), 0o644))
		s := openStore(t, dir, nil)
		require.Empty(t, s.Groups())
		require.Equal(t, emptyFile, string(readOffsets(t, dir)))
		require.Equal(t, []string{FileName}, dirNames(t, dir))
	})
}

// TestCloseAfterCrashFoldsTheJournal: a broker that crashed left journal
// segments (a torn tail in the newest); it restarts and stops again with
// no new commit. Close still folds everything into offsets.json, which
// then holds exactly every acknowledged commit, tombstones applied, and
// no segment is left.
func TestCloseAfterCrashFoldsTheJournal(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeOffsets(t, dir, readTestdata(t, "chapter-offsets.json")) // billing orders-0 = 6
	writeSegment(t, dir, 1, rec(
		commitOf("billing", Entry{Topic: "orders", Partition: 1, Offset: 17, Metadata: "m", LeaderEpoch: 3, CommitTimestampMs: 1_700_000_000_000}),
		commitOf("audit", ent("orders", 0, 1)),
	))
	writeSegment(t, dir, 2, append(rec(deleteOf("audit"), commitOf("shipping", ent("orders", 2, 4))), 0, 0, 0, 0x20, 1))

	s, err := Open(Config{Dir: dir})
	require.NoError(t, err)
	require.NoError(t, s.Close())

	const want = `{
  "version": 1,
  "groups": {
    "billing": [
      {
        "topic": "orders",
        "partition": 0,
        "offset": 6
      },
      {
        "topic": "orders",
        "partition": 1,
        "offset": 17,
        "metadata": "m",
        "leader_epoch": 3,
        "commit_timestamp_ms": 1700000000000
      }
    ],
    "shipping": [
      {
        "topic": "orders",
        "partition": 2,
        "offset": 4
      }
    ]
  }
}
`
	require.Equal(t, want, string(readOffsets(t, dir)))
	var left []string
	for _, n := range dirNames(t, dir) {
		if !strings.Contains(n, ".cut-") {
			left = append(left, n)
		}
	}
	require.Equal(t, []string{FileName}, left, "no segment and no temp file is left")
	require.Equal(t, []string{JournalPrefix + "2.cut-1"}, cutNames(t, dir), "the torn tail stays for inspection")
}

// cutNames returns the names of dir's saved torn tails.
func cutNames(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	for _, n := range dirNames(t, dir) {
		if strings.Contains(n, ".cut-") {
			out = append(out, n)
		}
	}
	return out
}

// FuzzReplaySegment opens a directory whose only segment holds arbitrary
// bytes after one good record. It must not panic or hang; it either
// reports corruption, leaving the bytes alone, or loads at least the good
// record, cuts the segment to its intact prefix (keeping the rest as
// .cut-1), and loads the same again.
func FuzzReplaySegment(f *testing.F) {
	good := rec(commitOf("billing", ent("orders", 0, 6)))
	f.Add([]byte{})
	f.Add(rec(commitOf("billing", ent("orders", 0, 7))))
	f.Add(rec(commitOf("billing", ent("orders", 0, 7)))[:9])
	f.Add(make([]byte, 32))
	f.Add(append(rec(commitOf("b", ent("t", 1, 2))), rec(deleteOf("c"))...))
	f.Add(v1Record(commitOf("b", ent("t", 1, 2))))
	f.Fuzz(func(t *testing.T, tail []byte) {
		dir := t.TempDir()
		writeOffsets(t, dir, []byte(emptyFile))
		data := append(bytes.Clone(good), tail...)
		path := writeSegment(t, dir, 1, data)

		s, err := Open(Config{Dir: dir})
		if err != nil {
			require.ErrorIs(t, err, ErrCorrupt)
			require.ErrorContains(t, err, path)
			require.Equal(t, data, must(os.ReadFile(path)))
			return
		}
		t.Cleanup(func() { require.NoError(t, s.Close()) })
		kept := must(os.ReadFile(path))
		require.Equal(t, data[:len(kept)], kept, "what stays is a prefix")
		if len(kept) < len(data) {
			require.Equal(t, data[len(kept):], must(os.ReadFile(path+".cut-1")), "what goes is kept")
		}
		require.Equal(t, snapshot(s), reopen(t, dir))
	})
}
