package atomicfile

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// failFS fails the named step and otherwise behaves as OS.
type failFS struct {
	OS
	step string
}

var errInjected = errors.New("injected failure")

type failFile struct {
	*os.File
	step string
}

func (f failFile) Write(p []byte) (int, error) {
	if f.step == "write" {
		return 0, errInjected
	}
	return f.File.Write(p)
}

func (f failFile) Sync() error {
	if f.step == "sync" {
		return errInjected
	}
	return f.File.Sync()
}

func (f failFile) Close() error {
	err := f.File.Close()
	if f.step == "close" {
		return errInjected
	}
	return err
}

func (fs failFS) CreateTemp(dir, pattern string) (File, error) {
	if fs.step == "create" {
		return nil, errInjected
	}
	f, err := os.CreateTemp(dir, pattern)
	if err != nil {
		return nil, err
	}
	return failFile{File: f, step: fs.step}, nil
}

func (fs failFS) Rename(oldpath, newpath string) error {
	if fs.step == "rename" {
		return errInjected
	}
	return fs.OS.Rename(oldpath, newpath)
}

func (fs failFS) SyncDir(dir string) error {
	if fs.step == "syncdir" {
		return errInjected
	}
	return fs.OS.SyncDir(dir)
}

func TestWriteReplacesContents(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "offsets.json")
	require.NoError(t, Write(OS{}, path, []byte("one")))
	require.NoError(t, Write(OS{}, path, []byte("two")))
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, "two", string(got))
	entries, err := os.ReadDir(filepath.Dir(path))
	require.NoError(t, err)
	require.Len(t, entries, 1, "no temporary file is left behind")
}

func TestWriteFailureLeavesTargetUntouched(t *testing.T) {
	t.Parallel()
	for _, step := range []string{"create", "write", "sync", "close", "rename"} {
		t.Run(step, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			path := filepath.Join(dir, "offsets.json")
			require.NoError(t, os.WriteFile(path, []byte("old"), 0o644))

			err := Write(failFS{step: step}, path, []byte("new"))
			require.ErrorIs(t, err, errInjected)
			require.Contains(t, err.Error(), dir)

			got, err := os.ReadFile(path)
			require.NoError(t, err)
			require.Equal(t, "old", string(got))
			entries, err := os.ReadDir(dir)
			require.NoError(t, err)
			require.Len(t, entries, 1, "the temporary file is removed")
		})
	}
}

func TestWriteDirectorySyncFailureIsReported(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "offsets.json")
	err := Write(failFS{step: "syncdir"}, path, []byte("new"))
	require.ErrorIs(t, err, errInjected)
	require.ErrorIs(t, err, ErrDirSync)
	got, rerr := os.ReadFile(path)
	require.NoError(t, rerr)
	require.Equal(t, "new", string(got), "the rename happened; only its durability is in doubt")
}

func TestWriteIntoMissingDirectoryFails(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "missing", "offsets.json")
	err := Write(OS{}, path, []byte("x"))
	require.ErrorIs(t, err, os.ErrNotExist)
	require.Contains(t, err.Error(), path)
}
