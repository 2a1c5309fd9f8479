package offsets

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/minibroker/minibroker/internal/atomicfile"
	"github.com/minibroker/minibroker/internal/datadir"
)

func TestSegmentNames(t *testing.T) {
	t.Parallel()
	for name, want := range map[string]bool{
		JournalPrefix + "1":                       true,
		JournalPrefix + "10":                      true,
		JournalPrefix + "011":                     false,
		JournalPrefix + "x1":                      false,
		JournalPrefix:                             false,
		JournalPrefix + "1.tmp-123":               false,
		JournalPrefix + "1.cut-1":                 false,
		JournalPrefix + "99999999999999999999999": false,
	} {
		_, ok := segmentSeq(name)
		require.Equal(t, want, ok, name)
	}
	for name, want := range map[string]bool{
		FileName + ".tmp-123":            true,
		JournalPrefix + "4.tmp-99":       true,
		JournalPrefix + "4.cut-1.tmp-99": true,
		FileName + ".tmp-":               false,
		"topics.json.tmp-123":            false, // the catalog's, not ours
		FileName:                         false,
		JournalPrefix + "4":              false,
		"other" + FileName + ".tmp-1":    false,
	} {
		require.Equal(t, want, isTempName(name), name)
	}
}

// TestScanDirRefusesSegmentsThatAreNotRegularFiles: a segment name on a
// symbolic link, a FIFO or a directory stops Open before anything is read
// through it.
func TestScanDirRefusesSegmentsThatAreNotRegularFiles(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		make func(t *testing.T, path string)
		what string
	}{
		{"symlink", func(t *testing.T, path string) {
			require.NoError(t, os.Symlink(filepath.Join(t.TempDir(), "elsewhere"), path))
		}, "symbolic link"},
		{"FIFO", func(t *testing.T, path string) { require.NoError(t, syscall.Mkfifo(path, 0o644)) }, "FIFO"},
		{"directory", func(t *testing.T, path string) { require.NoError(t, os.Mkdir(path, 0o755)) }, "directory"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			writeSegment(t, dir, 1, rec(commitOf("billing", ent("orders", 0, 6))))
			path := segmentPath(dir, 2)
			tc.make(t, path)
			_, err := scanDir(dir)
			require.ErrorIs(t, err, datadir.ErrNotRegular)
			require.ErrorContains(t, err, path+" is a "+tc.what+", not a journal segment")
		})
	}
}

func TestScanDir(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, name := range []string{JournalPrefix + "10", JournalPrefix + "2", JournalPrefix + "011", FileName, FileName + ".tmp-1", JournalPrefix + "3.tmp-2", JournalPrefix + "2.cut-1"} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), nil, 0o644))
	}
	require.NoError(t, os.Symlink(filepath.Join(dir, FileName), filepath.Join(dir, FileName+".tmp-link")))
	scan, err := scanDir(dir)
	require.NoError(t, err)
	require.Equal(t, []segment{{seq: 2, path: segmentPath(dir, 2)}, {seq: 10, path: segmentPath(dir, 10)}}, scan.segments)
	require.ElementsMatch(t, []string{filepath.Join(dir, FileName+".tmp-1"), filepath.Join(dir, JournalPrefix+"3.tmp-2")}, scan.temps,
		"only regular files are temp files to remove")
}

// TestTornTail: what a write cut short by a crash can leave at the end of
// the newest segment is torn; a whole record that fails its checksum for
// any other reason is damage. (Zeros where a record would start are not
// asked about: they are space filled ahead, TestZerosEndASegment.)
func TestTornTail(t *testing.T) {
	t.Parallel()
	small := rec(commitOf("billing", ent("orders", 0, 6)))
	// big is 120 bytes or so: placed at byte 500, it spans the sector
	// boundary at 512.
	big := rec(commitOf("billing", Entry{Topic: "orders", Offset: 7, Metadata: strings.Repeat("m", 80), LeaderEpoch: 1, CommitTimestampMs: 99}))
	flip := func(b []byte, i int) []byte {
		out := bytes.Clone(b)
		out[i] ^= 0x10
		return out
	}
	zeroFrom := func(b []byte, i int) []byte {
		out := bytes.Clone(b)
		clear(out[i:])
		return out
	}
	tests := []struct {
		name string
		tail []byte
		at   int64
		want bool
	}{
		{"header cut short", small[:5], 0, true},
		{"payload cut short", small[:len(small)-2], 40, true},
		{"impossible length that is not zeros", append([]byte{0xff, 0xff, 0xff, 0xff}, small[4:]...), 0, false},
		{"bit flip in a whole record", flip(small, recordHeaderBytes+3), 40, false},
		{"bit flip in the checksum", flip(small, 5), 40, false},
		{"zeros from the sector boundary inside the record", zeroFrom(big, 12), 500, true},
		{"zeros from the boundary, and more zeros after", append(zeroFrom(big, 12), make([]byte, 100)...), 500, true},
		{"zeros from inside a sector", zeroFrom(big, 20), 500, false},
		{"zeros from the boundary, but the record does not reach it", zeroFrom(small, 12), 100, false},
		{"zeros from inside a sector, on into preallocated space", append(zeroFrom(small, 10), make([]byte, 4096)...), 40, false},
		{"a torn-looking record followed by an intact one", append(bytes.Clone(small[:len(small)-5]), small...), 0, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, _, why := nextRecord(tc.tail)
			require.Error(t, why)
			require.Equal(t, tc.want, tornTail(tc.tail, tc.at, why))
		})
	}
}

func TestCutTailKeepsTheCutBytes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	good := rec(commitOf("billing", ent("orders", 0, 6)))
	for n, tail := range []string{"\x00\x00\x00", "\x00\x00\x10\x00partial"} {
		path := writeSegment(t, dir, 1, append(bytes.Clone(good), tail...))
		saved, err := cutTail(atomicfile.OS{}, segment{seq: 1, path: path, size: int64(len(good))}, []byte(tail))
		require.NoError(t, err)
		require.Equal(t, path+".cut-"+string(rune('1'+n)), saved, "the first free name")
		require.Equal(t, tail, string(must(os.ReadFile(saved))))
		require.Equal(t, good, must(os.ReadFile(path)))
	}
}
