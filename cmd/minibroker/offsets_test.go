package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/minibroker/minibroker/offsets"
)

// TestOffsetsCommandReadsTheJournal: while a store is open its commits sit
// in the journal, and `minibroker offsets` shows them.
func TestOffsetsCommandReadsTheJournal(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s, err := offsets.Open(offsets.Config{Dir: dir, CompactBytes: -1})
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	require.NoError(t, s.Commit("hello", []offsets.Entry{
		{Topic: "orders", Partition: 2, Offset: 6, LeaderEpoch: -1},
		{Topic: "orders", Partition: 0, Offset: 10, LeaderEpoch: -1, Metadata: "m"},
	}))
	require.NoError(t, s.Commit("other", []offsets.Entry{{Topic: "payments", Partition: 0, Offset: 1, LeaderEpoch: -1}}))
	snapshot, err := os.ReadFile(filepath.Join(dir, offsets.FileName))
	require.NoError(t, err)
	require.Contains(t, string(snapshot), `"groups": {}`, "offsets.json alone lags while the store runs")

	var stdout, stderr bytes.Buffer
	require.Equal(t, 0, run(t.Context(), []string{"offsets", "--data-dir", dir}, &stdout, &stderr), stderr.String())
	require.Equal(t, "GROUP  TOPIC     PARTITION  OFFSET  METADATA\n"+
		"hello  orders    0          10      m\n"+
		"hello  orders    2          6       \n"+
		"other  payments  0          1       \n", stdout.String())

	stdout.Reset()
	require.Equal(t, 0, run(t.Context(), []string{"offsets", "--data-dir", dir, "--group", "other"}, &stdout, &stderr))
	require.Equal(t, "GROUP  TOPIC     PARTITION  OFFSET  METADATA\nother  payments  0          1       \n", stdout.String())
	stdout.Reset()
	require.Equal(t, 1, run(t.Context(), []string{"offsets", "--data-dir", dir, "--group", "nope"}, &stdout, &stderr))
	require.Empty(t, stdout.String())
	require.Equal(t, `minibroker offsets: group "nope" has no committed offsets in `+dir+"; the groups that have: hello, other\n", stderr.String())
}

// TestOffsetsCommandWithoutADataDir: run where there is no data dir, or
// pointed at a directory or file a broker did not make, the command says
// so, names the path and the flag that points elsewhere, and prints no
// table; a data dir that holds only the broker's lock (no commit yet)
// prints the empty table, and asked for a group, says no group has
// committed there yet.
func TestOffsetsCommandWithoutADataDir(t *testing.T) {
	t.Parallel()
	empty := t.TempDir()
	file := filepath.Join(empty, "plain-file")
	require.NoError(t, os.WriteFile(file, nil, 0o644))
	fresh := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(fresh, ".lock"), nil, 0o644))
	missing := filepath.Join(empty, "minibroker-data")
	for _, tc := range []struct {
		name       string
		args       []string
		code       int
		stdout     string
		wantStderr string
	}{
		{"no such directory", []string{"--data-dir", missing}, 1, "",
			"minibroker offsets: no data dir at " + missing + ": run this where the broker runs (make run keeps its data dir in the repository's root), or give the broker's with --data-dir DIR\n"},
		{"a directory a broker did not make", []string{"--data-dir", empty}, 1, "",
			"minibroker offsets: " + empty + " is not a minibroker data dir (it holds no .lock, offsets.json or topics.json); give the broker's with --data-dir DIR\n"},
		{"a file", []string{"--data-dir", file}, 1, "",
			"minibroker offsets: " + file + " is not a directory; give the broker's data dir with --data-dir DIR\n"},
		{"a fresh data dir", []string{"--data-dir", fresh}, 0, "GROUP  TOPIC  PARTITION  OFFSET  METADATA\n(no committed offsets)\n", ""},
		{"a group in a fresh data dir", []string{"--data-dir", fresh, "--group", "hello"}, 1, "",
			`minibroker offsets: group "hello" has no committed offsets in ` + fresh + ", and no group has any there yet\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var stdout, stderr bytes.Buffer
			require.Equal(t, tc.code, run(t.Context(), append([]string{"offsets"}, tc.args...), &stdout, &stderr))
			require.Equal(t, tc.stdout, stdout.String())
			require.Equal(t, tc.wantStderr, stderr.String())
		})
	}
	require.NoDirExists(t, missing, "the command makes nothing")
}

func TestOffsetsCommandErrors(t *testing.T) {
	t.Parallel()
	corrupt := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(corrupt, offsets.FileName), []byte("{"), 0o644))
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--data-dir", corrupt}, 1, "corrupt offsets file"},
		{[]string{"--nope"}, 2, "flag provided but not defined: -nope (minibroker offsets -h for help)"},
		{[]string{"extra"}, 2, `unexpected argument "extra"`},
	} {
		var stdout, stderr bytes.Buffer
		require.Equal(t, tc.code, run(t.Context(), append([]string{"offsets"}, tc.args...), &stdout, &stderr))
		require.Contains(t, stderr.String(), tc.want)
	}
	var stdout, stderr bytes.Buffer
	require.Equal(t, 0, run(t.Context(), []string{"offsets", "-h"}, &stdout, &stderr))
	require.Contains(t, stdout.String(), "usage: minibroker offsets")
	require.Contains(t, stdout.String(), "-data-dir DIR")
}
