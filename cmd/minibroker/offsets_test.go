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
	require.Equal(t, 0, run(t.Context(), []string{"offsets", "--data-dir", dir, "--group", "nope"}, &stdout, &stderr))
	require.Equal(t, "GROUP  TOPIC  PARTITION  OFFSET  METADATA\n(no committed offsets)\n", stdout.String())
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
