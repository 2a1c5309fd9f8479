package records

import (
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestOSFileSystem checks the operations a Log makes on disk: exclusive
// create, positional I/O, sync, truncate, refusal of anything but a
// regular file, sorted listing with entry kinds.
func TestOSFileSystem(t *testing.T) {
	t.Parallel()
	checkFileSystem(t, osFS{}, t.TempDir())
	dir := t.TempDir()
	require.NoError(t, syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644))
	require.NoError(t, os.Symlink("nowhere", filepath.Join(dir, "link")))
	for _, name := range []string{"fifo", "link"} {
		_, _, err := osFS{}.OpenFile(filepath.Join(dir, name), false)
		require.ErrorIs(t, err, errNotRegular, name)
	}
	es, err := osFS{}.ReadDir(dir)
	require.NoError(t, err)
	require.Equal(t, []dirEntry{{"fifo", kindOther}, {"link", kindOther}}, es)
}

// checkFileSystem runs the same checks on any fileSystem.
func checkFileSystem(t *testing.T, fsys fileSystem, dir string) {
	sub := filepath.Join(dir, "a", "b")
	require.NoError(t, fsys.MkdirAll(sub))
	p := filepath.Join(sub, "f")
	f, size, err := fsys.OpenFile(p, true)
	require.NoError(t, err)
	require.Zero(t, size)
	_, _, err = fsys.OpenFile(p, true)
	require.ErrorIs(t, err, fs.ErrExist)
	_, _, err = fsys.OpenFile(filepath.Join(sub, "missing"), false)
	require.ErrorIs(t, err, fs.ErrNotExist)
	_, _, err = fsys.OpenFile(sub, false)
	require.ErrorIs(t, err, errNotRegular)

	_, err = f.WriteAt([]byte("hello world"), 0)
	require.NoError(t, err)
	_, err = f.WriteAt([]byte("W"), 6)
	require.NoError(t, err)
	require.NoError(t, f.Sync())
	buf := make([]byte, 5)
	n, err := f.ReadAt(buf, 6)
	require.NoError(t, err)
	require.Equal(t, "World", string(buf[:n]))
	n, err = f.ReadAt(buf, 9)
	require.ErrorIs(t, err, io.EOF)
	require.Equal(t, "ld", string(buf[:n]))
	require.NoError(t, f.Truncate(5))
	_, err = f.ReadAt(buf[:1], 5)
	require.ErrorIs(t, err, io.EOF)
	require.NoError(t, f.Close())

	g, size, err := fsys.OpenFile(p, false)
	require.NoError(t, err)
	require.Equal(t, int64(5), size)
	require.NoError(t, g.Close())

	require.NoError(t, fsys.WriteFileAtomic(filepath.Join(sub, "j"), []byte("{}")))
	data, err := fsys.ReadFile(filepath.Join(sub, "j"))
	require.NoError(t, err)
	require.Equal(t, "{}", string(data))
	_, err = fsys.ReadFile(filepath.Join(sub, "none"))
	require.True(t, isNotExist(err))
	require.NoError(t, fsys.SyncDir(sub))

	es, err := fsys.ReadDir(filepath.Join(dir, "a"))
	require.NoError(t, err)
	require.Equal(t, []dirEntry{{"b", kindDir}}, es)
	es, err = fsys.ReadDir(sub)
	require.NoError(t, err)
	require.Equal(t, []dirEntry{{"f", kindFile}, {"j", kindFile}}, es)
	require.NoError(t, fsys.Remove(p))
	require.Error(t, fsys.Remove(p))
}
