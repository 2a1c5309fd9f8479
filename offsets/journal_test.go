package offsets

import (
	"encoding/binary"
	"hash/crc32"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// rec returns the bytes of one journal record holding one commit per
// group/entries pair, in order.
func rec(commits ...*pending) []byte { return appendRecord(nil, commits) }

func commitOf(group string, entries ...Entry) *pending {
	return &pending{group: group, entries: entries}
}

// writeSegment writes data as segment seq of dir.
func writeSegment(t *testing.T, dir string, seq uint64, data []byte) string {
	t.Helper()
	path := segmentPath(dir, seq)
	require.NoError(t, os.WriteFile(path, data, 0o644))
	return path
}

// fileSize returns the size of the file at path.
func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	require.NoError(t, err)
	return fi.Size()
}

func TestRecordRoundTrip(t *testing.T) {
	t.Parallel()
	commits := []*pending{
		commitOf("billing",
			Entry{Topic: "orders", Partition: 0, Offset: 6, Metadata: "consumer-1 at 2024-05-01", LeaderEpoch: 4},
			ent("orders", 2147483647, 1<<62),
		),
		commitOf("analytics", Entry{Topic: "clicks", Partition: 3, Offset: 0, LeaderEpoch: 0}),
		commitOf("gr\u00fcppe", Entry{Topic: "t", Partition: 1, Offset: 2, Metadata: strings.Repeat("m", MaxMetadataBytes), LeaderEpoch: NoLeaderEpoch}),
		commitOf("billing", ent("orders", 0, 7)),
	}
	data := rec(commits...)
	payload, rest, err := nextRecord(data)
	require.NoError(t, err)
	require.Empty(t, rest)

	var got []*pending
	require.NoError(t, decodeRecord(payload, func(group string, entries []Entry) {
		got = append(got, commitOf(group, entries...))
	}))
	require.Equal(t, commits, got, "commits come back whole and in order")
}

func TestNextRecordTorn(t *testing.T) {
	t.Parallel()
	full := rec(commitOf("billing", ent("orders", 0, 6)))
	badCRC := append([]byte(nil), full...)
	badCRC[len(badCRC)-1] ^= 0xff
	zeroLength := make([]byte, 16)
	huge := append([]byte(nil), full...)
	binary.BigEndian.PutUint32(huge, maxPayloadBytes+1)
	tests := map[string][]byte{
		"empty":                  {},
		"half a header":          full[:3],
		"header only":            full[:recordHeaderBytes],
		"payload cut short":      full[:len(full)-1],
		"checksum mismatch":      badCRC,
		"zero-filled":            zeroLength,
		"impossible length":      huge,
		"length below a payload": {0, 0, 0, 1, 0, 0, 0, 0, 1},
	}
	for name, data := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, _, err := nextRecord(data)
			require.ErrorIs(t, err, errTorn)
		})
	}
}

func TestDecodeRecordRejectsBadPayloads(t *testing.T) {
	t.Parallel()
	good := rec(commitOf("billing", ent("orders", 0, 6)))[recordHeaderBytes:]
	payload := func(build func(b []byte) []byte) []byte { return build([]byte{recordVersion}) }
	str := func(b []byte, s string) []byte { return appendString(b, s) }
	entry := func(b []byte, topic string, partition, offset, epoch int64, metadata string) []byte {
		b = str(b, topic)
		b = binary.AppendVarint(b, partition)
		b = binary.AppendVarint(b, offset)
		b = binary.AppendVarint(b, epoch)
		return str(b, metadata)
	}
	oneCommit := func(group string, entries ...func([]byte) []byte) []byte {
		return payload(func(b []byte) []byte {
			b = binary.AppendUvarint(b, 1)
			b = str(b, group)
			b = binary.AppendUvarint(b, uint64(len(entries)))
			for _, e := range entries {
				b = e(b)
			}
			return b
		})
	}
	tests := []struct {
		name, payload, wantMsg string
	}{
		{"version 2", string(append([]byte{2}, good[1:]...)), "record version 2"},
		{"no count", string([]byte{recordVersion}), "bad uvarint"},
		{"trailing bytes", string(append(append([]byte(nil), good...), 0)), "bytes after the last commit"},
		{"cut inside a string", string(good[:5]), "exceeds the record"},
		{"entry count beyond the record", string(payload(func(b []byte) []byte {
			b = binary.AppendUvarint(b, 1)
			b = str(b, "g")
			return binary.AppendUvarint(b, 1000)
		})), "entry count 1000"},
		{"negative offset", string(oneCommit("g", func(b []byte) []byte { return entry(b, "orders", 0, -1, -1, "") })), "negative offset"},
		{"negative partition", string(oneCommit("g", func(b []byte) []byte { return entry(b, "orders", -1, 1, -1, "") })), "invalid offset entry"},
		{"empty topic", string(oneCommit("g", func(b []byte) []byte { return entry(b, "", 0, 1, -1, "") })), "invalid offset entry"},
		{"partition over int32", string(oneCommit("g", func(b []byte) []byte { return entry(b, "orders", 1<<31, 1, -1, "") })), "overflows int32"},
		{"invalid UTF-8 group", string(oneCommit("g\xff", func(b []byte) []byte { return entry(b, "orders", 0, 1, -1, "") })), "invalid offset entry"},
		{"metadata too large", string(oneCommit("g", func(b []byte) []byte {
			return entry(b, "orders", 0, 1, -1, strings.Repeat("m", MaxMetadataBytes+1))
		})), "offset metadata too large"},
		{"bad varint", string(payload(func(b []byte) []byte {
			b = binary.AppendUvarint(b, 1)
			b = str(b, "g")
			b = binary.AppendUvarint(b, 1)
			b = str(b, "orders")
			return append(b, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff)
		})), "bad varint"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			applied := 0
			err := decodeRecord([]byte(tc.payload), func(string, []Entry) { applied++ })
			require.ErrorContains(t, err, tc.wantMsg)
		})
	}
}

// TestOpenReplaysJournalOverSnapshot: segments replay in numeric order
// (2 before 10) over offsets.json, later values winning.
func TestOpenReplaysJournalOverSnapshot(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeOffsets(t, dir, readTestdata(t, "chapter-offsets.json")) // billing orders-0 = 6
	writeSegment(t, dir, 10, rec(commitOf("billing", ent("orders", 0, 9))))
	writeSegment(t, dir, 2, rec(commitOf("billing", ent("orders", 0, 7), ent("orders", 1, 1)), commitOf("shipping", ent("orders", 0, 3))))
	// Neither of these is a segment.
	require.NoError(t, os.WriteFile(filepath.Join(dir, JournalPrefix+"11.tmp-123"), []byte("garbage"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, JournalPrefix+"011"), []byte("garbage"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, JournalPrefix+"x1"), []byte("garbage"), 0o644))

	s := openStore(t, dir, nil)
	want := map[string][]Entry{
		"billing":  {ent("orders", 0, 9), ent("orders", 1, 1)},
		"shipping": {ent("orders", 0, 3)},
	}
	require.Equal(t, want, snapshot(s))
	seg2 := rec(commitOf("billing", ent("orders", 0, 7), ent("orders", 1, 1)), commitOf("shipping", ent("orders", 0, 3)))
	seg10 := rec(commitOf("billing", ent("orders", 0, 9)))
	require.Equal(t, int64(len(seg2)+len(seg10)), s.Stats().JournalBytes)

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

// TestOpenCutsTornTail: a record cut short (or failing its checksum) at
// the end of the newest segment was never acknowledged; Open cuts it off,
// keeps every record before it, and the store goes on appending.
func TestOpenCutsTornTail(t *testing.T) {
	t.Parallel()
	first := rec(commitOf("billing", ent("orders", 0, 6)))
	second := rec(commitOf("billing", ent("orders", 0, 7)), commitOf("shipping", ent("orders", 1, 2)))
	badCRC := append([]byte(nil), second...)
	badCRC[recordHeaderBytes+3] ^= 0x01
	tests := map[string][]byte{
		"header cut short":     second[:5],
		"payload cut short":    second[:len(second)-2],
		"checksum mismatch":    badCRC,
		"zeros after a record": make([]byte, 64),
		"garbage tail":         []byte("\x00\x00\x10\x00partial"),
	}
	for name, tail := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			writeOffsets(t, dir, []byte(emptyFile))
			path := writeSegment(t, dir, 1, append(append([]byte(nil), first...), tail...))

			s := openStore(t, dir, nil)
			require.Equal(t, map[string][]Entry{"billing": {ent("orders", 0, 6)}}, snapshot(s))
			require.Equal(t, int64(len(first)), fileSize(t, path), "the torn record is cut off")

			require.NoError(t, s.Commit("billing", []Entry{ent("orders", 0, 8)}))
			require.Equal(t, map[string][]Entry{"billing": {ent("orders", 0, 8)}}, reopen(t, dir))
		})
	}
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
		out := append([]byte(nil), b...)
		out[i] ^= 0x40
		return out
	}
	cat := func(parts ...[]byte) []byte {
		var out []byte
		for _, p := range parts {
			out = append(out, p...)
		}
		return out
	}
	undecodable := func() []byte {
		payload := []byte{recordVersion, 1, 1, 'g', 5} // five entries, none there
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
			require.ErrorContains(t, err, paths[tc.bad])
			require.Nil(t, s)
			require.Equal(t, before, dirNames(t, dir))
			for i, data := range tc.segments {
				require.Equal(t, data, must(os.ReadFile(paths[i])), "segment %d is left byte for byte", i+1)
			}
		})
	}
}

func crcOf(payload []byte) uint32 { return crc32.Checksum(payload, castagnoli) }

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

// FuzzReplaySegment opens a directory whose only segment holds arbitrary
// bytes after one good record. It must not panic; it either reports
// corruption, leaving the bytes alone, or loads at least the good record,
// cuts the segment to its intact prefix, and loads the same again.
func FuzzReplaySegment(f *testing.F) {
	good := rec(commitOf("billing", ent("orders", 0, 6)))
	f.Add([]byte{})
	f.Add(rec(commitOf("billing", ent("orders", 0, 7))))
	f.Add(rec(commitOf("billing", ent("orders", 0, 7)))[:9])
	f.Add(make([]byte, 32))
	f.Add(append(rec(commitOf("b", ent("t", 1, 2))), rec(commitOf("c", ent("t", 1, 3)))...))
	f.Fuzz(func(t *testing.T, tail []byte) {
		dir := t.TempDir()
		writeOffsets(t, dir, []byte(emptyFile))
		data := append(append([]byte(nil), good...), tail...)
		path := writeSegment(t, dir, 1, data)

		s, err := Open(Config{Dir: dir})
		if err != nil {
			require.ErrorIs(t, err, ErrCorrupt)
			require.ErrorContains(t, err, path)
			require.Equal(t, data, must(os.ReadFile(path)))
			return
		}
		t.Cleanup(func() { require.NoError(t, s.Close()) })
		require.Contains(t, s.Groups(), "billing")
		require.Equal(t, data[:fileSize(t, path)], must(os.ReadFile(path)), "what stays is a prefix")
		require.Equal(t, snapshot(s), reopen(t, dir))
	})
}
