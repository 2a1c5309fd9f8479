package main

import (
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestProfileWritesEveryProfile: --profile-dir ends with four gzipped
// pprof profiles, none of them empty.
func TestProfileWritesEveryProfile(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "prof")
	f, err := parseServeFlags([]string{"--profile-dir", dir}, io.Discard)
	require.NoError(t, err)
	require.Equal(t, dir, f.profileDir)
	p, err := startProfile(f.profileDir, f.traceFile)
	require.NoError(t, err)
	require.NoError(t, p.stop())
	for _, name := range []string{"cpu", "allocs", "mutex", "heap"} {
		file, err := os.Open(filepath.Join(dir, name+".pprof"))
		require.NoError(t, err, name)
		zr, err := gzip.NewReader(file)
		require.NoError(t, err, name)
		body, err := io.ReadAll(zr)
		require.NoError(t, err, name)
		require.NotEmpty(t, body, name)
		require.NoError(t, file.Close())
	}
}

// TestTraceFile: --trace-file alone writes an execution trace that go
// tool trace reads (its header, then the run's events) and no pprof
// profile.
func TestTraceFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "run.trace")
	f, err := parseServeFlags([]string{"--trace-file", path}, io.Discard)
	require.NoError(t, err)
	require.Equal(t, path, f.traceFile)
	p, err := startProfile(f.profileDir, f.traceFile)
	require.NoError(t, err)
	require.NoError(t, p.stop())
	body, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Regexp(t, `^go 1\.\d+ trace\x00+$`, string(body[:16]), "the trace format's header")
	require.Greater(t, len(body), 16, "events after the header")
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 1, "the trace and nothing else")
}

// TestTraceFileDirectory: the trace file's directory is made if missing,
// as --profile-dir's is; one that cannot be made is an error naming the
// flag.
func TestTraceFileDirectory(t *testing.T) {
	path := filepath.Join(t.TempDir(), "traces", "run.trace")
	p, err := startProfile("", path)
	require.NoError(t, err)
	require.NoError(t, p.stop())
	require.FileExists(t, path)

	file := filepath.Join(t.TempDir(), "file")
	require.NoError(t, os.WriteFile(file, nil, 0o644))
	_, err = startProfile("", filepath.Join(file, "run.trace"))
	require.ErrorContains(t, err, "--trace-file: ")
}

// TestProfileOff: without --profile-dir or --trace-file nothing is
// started or written.
func TestProfileOff(t *testing.T) {
	p, err := startProfile("", "")
	require.NoError(t, err)
	require.Nil(t, p)
	require.NoError(t, p.stop())
}

// TestProfileDirNotCreatable: a directory that cannot be made is an
// error naming the flag.
func TestProfileDirNotCreatable(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	require.NoError(t, os.WriteFile(file, nil, 0o644))
	_, err := startProfile(filepath.Join(file, "prof"), "")
	require.ErrorContains(t, err, "--profile-dir: ")
	trace := filepath.Join(t.TempDir(), "run.trace")
	_, err = startProfile(filepath.Join(file, "prof"), trace)
	require.ErrorContains(t, err, "--profile-dir: ")
	p, err := startProfile("", trace)
	require.NoError(t, err, "the failed start stopped its trace")
	require.NoError(t, p.stop())
}
