package offsets

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestLoadChapterFile checks that files in the chapter's format, with or
// without fields we do not know, load as the chapter wrote them.
func TestLoadChapterFile(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		file string // in testdata
		want map[string][]Entry
	}{
		{
			name: "chapter file",
			file: "chapter-offsets.json",
			want: map[string][]Entry{"billing": {ent("orders", 0, 6)}},
		},
		{
			name: "unknown fields per entry and at top level",
			file: "chapter-offsets-extra.json",
			want: map[string][]Entry{"billing": {ent("orders", 0, 6)}},
		},
		{
			name: "golden file with metadata and leader epochs",
			file: "golden-offsets.json",
			want: map[string][]Entry{
				"analytics": {{Topic: "orders", Partition: 0, Offset: 0, LeaderEpoch: 0}},
				"billing": {
					ent("audit", 0, 2),
					{Topic: "orders", Partition: 2, Offset: 8, Metadata: `a<b>&"c"`, LeaderEpoch: 3},
					ent("orders", 10, 42),
				},
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			data := readTestdata(t, tc.file)
			writeOffsets(t, dir, data)

			s := openStore(t, dir, nil)
			require.Equal(t, tc.want, snapshot(s))
			require.Equal(t, data, readOffsets(t, dir), "loading never rewrites the file")
		})
	}
}

func TestLoadChapterFileLookup(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeOffsets(t, dir, readTestdata(t, "chapter-offsets.json"))
	s := openStore(t, dir, nil)

	got, ok := s.Lookup("billing", "orders", 0)
	require.True(t, ok)
	require.Equal(t, int64(6), got.Offset)
	require.Equal(t, int32(NoLeaderEpoch), got.LeaderEpoch)
	require.Empty(t, got.Metadata)
	require.Equal(t, []string{"billing"}, s.Groups())
}

func TestLoadCorruptFile(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		data string
	}{
		{name: "not JSON", data: "offsets: billing orders 0 6"},
		{name: "truncated JSON", data: `{"version":1,"groups":{"billing":[{"topic":"orders","partition":0,"off`},
		{name: "empty file", data: ""},
		{name: "whitespace only", data: " \n\t"},
		{name: "JSON null", data: "null"},
		{name: "top level is a list", data: `[{"version":1}]`},
		{name: "trailing garbage", data: `{"version":1,"groups":{}} {}`},
		{name: "version 2", data: `{"version":2,"groups":{"billing":[{"topic":"orders","partition":0,"offset":6}]}}`},
		{name: "version 0", data: `{"version":0,"groups":{}}`},
		{name: "version as a string", data: `{"version":"1","groups":{}}`},
		{name: "missing version", data: `{"groups":{"billing":[{"topic":"orders","partition":0,"offset":6}]}}`},
		{name: "null version", data: `{"version":null,"groups":{}}`},
		{name: "groups is a list", data: `{"version":1,"groups":[]}`},
		{name: "entry without offset", data: `{"version":1,"groups":{"billing":[{"topic":"orders","partition":0}]}}`},
		{name: "entry with null offset", data: `{"version":1,"groups":{"billing":[{"topic":"orders","partition":0,"offset":null}]}}`},
		{name: "entry without partition", data: `{"version":1,"groups":{"billing":[{"topic":"orders","offset":6}]}}`},
		{name: "entry without topic", data: `{"version":1,"groups":{"billing":[{"partition":0,"offset":6}]}}`},
		{name: "entry with empty topic", data: `{"version":1,"groups":{"billing":[{"topic":"","partition":0,"offset":6}]}}`},
		{name: "null entry", data: `{"version":1,"groups":{"billing":[null]}}`},
		{name: "offset -3", data: `{"version":1,"groups":{"billing":[{"topic":"orders","partition":0,"offset":-3}]}}`},
		{name: "negative partition", data: `{"version":1,"groups":{"billing":[{"topic":"orders","partition":-1,"offset":6}]}}`},
		{name: "fractional offset", data: `{"version":1,"groups":{"billing":[{"topic":"orders","partition":0,"offset":6.5}]}}`},
		{name: "offset as a string", data: `{"version":1,"groups":{"billing":[{"topic":"orders","partition":0,"offset":"6"}]}}`},
		{name: "partition over int32", data: `{"version":1,"groups":{"billing":[{"topic":"orders","partition":2147483648,"offset":6}]}}`},
		{name: "bad entry after good ones", data: `{"version":1,"groups":{"a":[{"topic":"orders","partition":0,"offset":6}],"b":[{"topic":"orders","partition":0,"offset":1},{"topic":"orders","partition":1}]}}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			path := writeOffsets(t, dir, []byte(tc.data))

			s, err := Open(Config{Dir: dir})
			require.ErrorIs(t, err, ErrCorrupt)
			require.ErrorContains(t, err, path)
			require.Nil(t, s)
			require.Equal(t, tc.data, string(readOffsets(t, dir)), "a corrupt file is left byte-for-byte unchanged")
			require.Equal(t, []string{FileName}, dirNames(t, dir), "nothing else is written")
		})
	}
}

func TestLoadUnreadablePath(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, FileName)
	require.NoError(t, os.Mkdir(path, 0o755))

	s, err := Open(Config{Dir: dir})
	require.Error(t, err)
	require.Nil(t, s)
	require.ErrorContains(t, err, path)
	require.NotErrorIs(t, err, ErrCorrupt, "a file we cannot read is not a corrupt file")

	fi, err := os.Stat(path)
	require.NoError(t, err)
	require.True(t, fi.IsDir(), "the path is left as it was")
}

// TestLoadStrict: what encoding/json would let through silently (a
// partition or a group twice, an id it would change on the way in) stops
// Open with a message naming the file, the group and the entry.
func TestLoadStrict(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, data, wantMsg string
	}{
		{
			name:    "one partition twice in a group",
			data:    `{"version":1,"groups":{"billing":[{"topic":"orders","partition":0,"offset":1},{"topic":"audit","partition":0,"offset":1},{"topic":"orders","partition":0,"offset":2}]}}`,
			wantMsg: `group "billing" entry 2: orders-0 again (first as entry 0)`,
		},
		{
			name:    "one group key twice",
			data:    `{"version":1,"groups":{"billing":[{"topic":"orders","partition":0,"offset":1}],"billing":[{"topic":"orders","partition":1,"offset":2}]}}`,
			wantMsg: `group "billing" appears twice`,
		},
		{
			name:    "one group key twice, spelled differently",
			data:    `{"version":1,"groups":{"billing":[],"billing":[{"topic":"orders","partition":1,"offset":2}]}}`,
			wantMsg: `group "billing" appears twice`,
		},
		{
			name:    "a field twice in an entry",
			data:    `{"version":1,"groups":{"billing":[{"topic":"orders","partition":0,"offset":1,"offset":7}]}}`,
			wantMsg: `group "billing" entry 0: "offset" appears twice`,
		},
		{
			name:    "groups twice",
			data:    `{"version":1,"groups":{},"groups":{"billing":[{"topic":"orders","partition":0,"offset":1}]}}`,
			wantMsg: `"groups" appears twice`,
		},
		{
			name:    "group name not UTF-8",
			data:    "{\"version\":1,\"groups\":{\"bill\xffing\":[{\"topic\":\"orders\",\"partition\":0,\"offset\":1}]}}",
			wantMsg: "group \"bill\uFFFDing\": the name is not valid UTF-8",
		},
		{
			name:    "topic not UTF-8",
			data:    "{\"version\":1,\"groups\":{\"billing\":[{\"topic\":\"ord\xc3rs\",\"partition\":0,\"offset\":1}]}}",
			wantMsg: "group \"billing\" entry 0: topic \"ord\uFFFDrs\" is not valid UTF-8",
		},
		{
			name:    "metadata with a lone surrogate",
			data:    `{"version":1,"groups":{"billing":[{"topic":"orders","partition":0,"offset":1,"metadata":"a\ud800b"}]}}`,
			wantMsg: "group \"billing\" entry 0: metadata \"a\uFFFDb\" is not valid UTF-8",
		},
		{
			name:    "negative commit time",
			data:    `{"version":1,"groups":{"billing":[{"topic":"orders","partition":0,"offset":1,"commit_timestamp_ms":-1}]}}`,
			wantMsg: `group "billing" entry 0: negative partition or commit time, or an offset below -2`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			path := writeOffsets(t, dir, []byte(tc.data))
			s, err := Open(Config{Dir: dir})
			require.Nil(t, s)
			require.ErrorIs(t, err, ErrCorrupt)
			require.ErrorContains(t, err, path+": "+tc.wantMsg)
			require.Equal(t, tc.data, string(readOffsets(t, dir)), "left byte for byte")
		})
	}
}

// TestLoadKeepsWhatReadsBackAsWritten: U+FFFD spelled in the file, as
// itself or escaped, and a surrogate pair, are faithful; duplicates in a
// field we do not know are not ours to judge.
func TestLoadKeepsWhatReadsBackAsWritten(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeOffsets(t, dir, []byte(`{"version":1,"extra":{"a":1,"a":2},"groups":{"g\ufffd":[`+
		"{\"topic\":\"t\uFFFD\",\"partition\":0,\"offset\":1,\"metadata\":\"\\ud83d\\ude00 \\\\ufffd \\uFFFD\",\"unknown\":\"\xff\",\"commit_timestamp_ms\":1700000000000}]}}"))
	s := openStore(t, dir, nil)
	want := map[string][]Entry{"g\uFFFD": {{Topic: "t\uFFFD", Offset: 1, Metadata: "\U0001F600 \\ufffd \uFFFD", LeaderEpoch: NoLeaderEpoch, CommitTimestampMs: 1_700_000_000_000}}}
	require.Equal(t, want, snapshot(s))
}

// TestFileGolden commits out of order through the store and compares the
// file with testdata/golden-offsets.json byte for byte: groups by name,
// entries by topic then partition (numerically), leader epoch 0 kept, no
// HTML escaping of metadata.
func TestFileGolden(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := openStore(t, dir, nil)
	require.NoError(t, s.Commit("billing", []Entry{
		ent("orders", 10, 42),
		{Topic: "orders", Partition: 2, Offset: 7, Metadata: "old", LeaderEpoch: 0},
		ent("audit", 0, 2),
	}))
	require.NoError(t, s.Commit("analytics", []Entry{{Topic: "orders", Partition: 0, Offset: 0, LeaderEpoch: 0}}))
	require.NoError(t, s.Commit("billing", []Entry{{Topic: "orders", Partition: 2, Offset: 8, Metadata: `a<b>&"c"`, LeaderEpoch: 3}}))
	// Commits go to the journal; Close (like a compaction) folds it into
	// offsets.json and leaves that file alone in the directory.
	require.NoError(t, s.Close())

	require.Equal(t, string(readTestdata(t, "golden-offsets.json")), string(readOffsets(t, dir)))
	require.Equal(t, []string{FileName}, dirNames(t, dir))
}

func TestEncodeEmpty(t *testing.T) {
	t.Parallel()
	want := "{\n  \"version\": 1,\n  \"groups\": {}\n}\n"
	require.Equal(t, want, string(encode(table{}, nil)))
	require.Equal(t, want, string(encode(nil, table{})))
}

func TestEncodeOverlayReplacesGroups(t *testing.T) {
	t.Parallel()
	base := table{}
	base.commit("billing", []Entry{ent("orders", 0, 1), ent("orders", 1, 1)})
	base.commit("shipping", []Entry{ent("orders", 0, 3)})
	overlay := table{}
	overlay.commit("billing", []Entry{ent("orders", 0, 2)})

	got, err := decode(encode(base, overlay))
	require.NoError(t, err)
	want := table{}
	want.commit("billing", []Entry{ent("orders", 0, 2)})
	want.commit("shipping", []Entry{ent("orders", 0, 3)})
	require.Equal(t, want, got)
}

// FuzzLoad writes arbitrary bytes as offsets.json and opens the store. It
// must not panic; it either reports a corrupt file, left unchanged, or
// loads offsets that survive a re-encode and re-load unchanged.
func FuzzLoad(f *testing.F) {
	f.Add(readTestdata(f, "chapter-offsets.json"))
	f.Add(readTestdata(f, "chapter-offsets-extra.json"))
	f.Add(readTestdata(f, "golden-offsets.json"))
	f.Add([]byte(""))
	f.Add([]byte(`{"version":1,"groups":{"billing":[{"topic":"orders","partition":0,"off`))
	f.Add([]byte(`{"version":2,"groups":{}}`))
	f.Add([]byte(`{"groups":{}}`))
	f.Add([]byte(`{"version":1,"groups":{"billing":[{"topic":"orders","partition":0}]}}`))
	f.Add([]byte(`{"version":1,"groups":{"billing":[{"topic":"orders","partition":0,"offset":-1}]}}`))
	f.Add([]byte(`{"version":1,"groups":{"billing":[{"topic":"orders","partition":0,"offset":1},{"topic":"orders","partition":0,"offset":2,"leader_epoch":-1}],"empty":[]}}`))
	f.Add([]byte(`{"version":1,"groups":{"g":[],"g":[{"topic":"t","partition":0,"offset":1}]}}`))
	f.Add([]byte("{\"version\":1,\"groups\":{\"g\xff\":[{\"topic\":\"t\",\"partition\":0,\"offset\":1,\"metadata\":\"\\ud800\"}]}}"))
	f.Add([]byte(`{"version":1,"groups":{"g":[{"topic":"t","partition":0,"offset":1,"commit_timestamp_ms":1700000000000}]}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		path := writeOffsets(t, dir, data)

		s, err := Open(Config{Dir: dir})
		if err != nil {
			require.ErrorIs(t, err, ErrCorrupt)
			require.ErrorContains(t, err, path)
			require.Equal(t, data, readOffsets(t, dir))
			return
		}
		t.Cleanup(func() { require.NoError(t, s.Close()) })
		require.Equal(t, data, readOffsets(t, dir), "loading never rewrites the file")

		again := encodeStore(s)
		dir2 := t.TempDir()
		writeOffsets(t, dir2, again)
		s2 := openStore(t, dir2, nil)
		require.Equal(t, s.Groups(), s2.Groups())
		for _, g := range s.Groups() {
			require.Equal(t, s.Committed(g), s2.Committed(g), "group %q", g)
		}
		require.Equal(t, string(again), string(encodeStore(s2)), "encoding a loaded file is a fixed point")
	})
}
