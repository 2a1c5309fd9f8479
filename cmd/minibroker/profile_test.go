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
	p, err := startProfile(f.profileDir)
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

// TestProfileOff: without --profile-dir nothing is started or written.
func TestProfileOff(t *testing.T) {
	p, err := startProfile("")
	require.NoError(t, err)
	require.Nil(t, p)
	require.NoError(t, p.stop())
}

// TestProfileDirNotCreatable: a directory that cannot be made is an
// error naming the flag.
func TestProfileDirNotCreatable(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	require.NoError(t, os.WriteFile(file, nil, 0o644))
	_, err := startProfile(filepath.Join(file, "prof"))
	require.ErrorContains(t, err, "--profile-dir: ")
}
