package datadir

import (
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestOpenRefusesWhatIsNotARegularFile: Open, OpenFile and ReadFile never
// follow a symbolic link, never block on a FIFO, and say what they found.
func TestOpenRefusesWhatIsNotARegularFile(t *testing.T) {
	t.Parallel()
	outside := filepath.Join(t.TempDir(), "outside")
	require.NoError(t, os.WriteFile(outside, []byte("outside"), 0o644))
	tests := []struct {
		name string
		make func(t *testing.T, path string)
		what string
	}{
		{"symlink", func(t *testing.T, path string) { require.NoError(t, os.Symlink(outside, path)) }, "symbolic link; refusing to follow it"},
		{"FIFO", func(t *testing.T, path string) { require.NoError(t, syscall.Mkfifo(path, 0o644)) }, "FIFO"},
		{"directory", func(t *testing.T, path string) { require.NoError(t, os.Mkdir(path, 0o755)) }, "directory"},
		{"socket", func(t *testing.T, path string) {
			ln, err := net.Listen("unix", path)
			require.NoError(t, err)
			t.Cleanup(func() { _ = ln.Close() })
		}, "socket"},
	}
	opens := map[string]func(path string) error{
		"Open":     func(path string) error { f, err := Open(path); closeIf(f); return err },
		"ReadFile": func(path string) error { _, err := ReadFile(path); return err },
		"OpenFile for writing": func(path string) error {
			f, err := OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
			closeIf(f)
			return err
		},
	}
	for _, tc := range tests {
		for name, open := range opens {
			t.Run(tc.name+"/"+name, func(t *testing.T) {
				t.Parallel()
				// Unix socket paths are short: keep the directory's name short.
				dir, err := os.MkdirTemp("", "dd")
				require.NoError(t, err)
				t.Cleanup(func() { _ = os.RemoveAll(dir) })
				path := filepath.Join(dir, "f")
				tc.make(t, path)
				done := make(chan error, 1)
				go func() { done <- open(path) }()
				select {
				case err := <-done:
					require.ErrorIs(t, err, ErrNotRegular)
					require.ErrorContains(t, err, path+" is a "+tc.what)
				case <-time.After(10 * time.Second):
					t.Fatal("open blocked")
				}
				require.Equal(t, "outside", string(must(os.ReadFile(outside))), "the target is untouched")
			})
		}
	}
}

func closeIf(f *os.File) {
	if f != nil {
		_ = f.Close()
	}
}

func TestReadFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, size := range []int{0, 1, 511, 512, 513, 70_000} {
		path := filepath.Join(dir, "f")
		data := make([]byte, size)
		for i := range data {
			data[i] = byte(i)
		}
		require.NoError(t, os.WriteFile(path, data, 0o644))
		got, err := ReadFile(path)
		require.NoError(t, err)
		require.Equal(t, data, got, "size %d", size)
	}
	_, err := ReadFile(filepath.Join(dir, "missing"))
	require.ErrorIs(t, err, fs.ErrNotExist)
}

func TestKind(t *testing.T) {
	t.Parallel()
	for mode, want := range map[fs.FileMode]string{
		0o644:                             "regular file",
		fs.ModeSymlink:                    "symbolic link",
		fs.ModeDir:                        "directory",
		fs.ModeNamedPipe:                  "FIFO",
		fs.ModeSocket:                     "socket",
		fs.ModeDevice | fs.ModeCharDevice: "character device",
		fs.ModeDevice:                     "device",
		fs.ModeIrregular:                  "special file",
	} {
		require.Equal(t, want, Kind(mode), "%v", mode)
	}
}
