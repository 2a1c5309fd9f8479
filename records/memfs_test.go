package records

import (
	"os"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestMemFileSystem runs the disk checks on the memory file system, and
// checks that a removed file stays readable through open handles and that
// a closed handle refuses I/O.
func TestMemFileSystem(t *testing.T) {
	t.Parallel()
	m := newMemFS()
	checkFileSystem(t, m, "logs")
	require.NoError(t, m.MkdirAll("d"))
	f, _, err := m.OpenFile("d/x", true)
	require.NoError(t, err)
	_, err = f.WriteAt([]byte("abc"), 0)
	require.NoError(t, err)
	require.NoError(t, m.Remove("d/x"))
	buf := make([]byte, 3)
	_, err = f.ReadAt(buf, 0)
	require.NoError(t, err)
	require.Equal(t, "abc", string(buf))
	_, err = f.WriteAt([]byte("zz"), 10)
	require.NoError(t, err)
	require.NoError(t, f.Truncate(12))
	b := make([]byte, 12)
	_, err = f.ReadAt(b, 0)
	require.NoError(t, err)
	require.Equal(t, "abc\x00\x00\x00\x00\x00\x00\x00zz", string(b))
	require.NoError(t, f.Close())
	require.ErrorIs(t, f.Close(), os.ErrClosed)
	_, err = f.ReadAt(buf, 0)
	require.ErrorIs(t, err, os.ErrClosed)
	_, err = f.WriteAt(buf, 0)
	require.ErrorIs(t, err, os.ErrClosed)
	require.ErrorIs(t, f.Sync(), os.ErrClosed)
	require.ErrorIs(t, f.Truncate(0), os.ErrClosed)
	_, err = m.ReadDir("nope")
	require.Error(t, err)
	require.NoError(t, m.MkdirAll("d/y/z"))
	g, _, err := m.OpenFile("d/file", true)
	require.NoError(t, err)
	require.NoError(t, g.Close())
	require.Error(t, m.MkdirAll("d/file/sub"), "a file is in the way")
}
