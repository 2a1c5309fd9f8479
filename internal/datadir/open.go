package datadir

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
)

// ErrNotRegular is returned for a path in the data directory that is not a
// regular file: a symbolic link (never followed), a FIFO, a socket, a
// device or a directory.
var ErrNotRegular = errors.New("not a regular file")

// OpenFile opens path like os.OpenFile, but never follows a symbolic link
// as the last element of path, never blocks in the open (a FIFO with no
// writer, say), and refuses anything that is not a regular file. The error
// names the path and what it is, and wraps ErrNotRegular. With O_CREATE, a
// dangling symbolic link is refused, not followed to create its target.
func OpenFile(path string, flag int, perm fs.FileMode) (*os.File, error) {
	if noFollow == 0 { // no O_NOFOLLOW: check first, and accept the race
		if fi, err := os.Lstat(path); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
			return nil, notRegular(path, fi.Mode())
		}
	}
	f, err := os.OpenFile(path, flag|noFollow|nonBlock, perm)
	if err != nil {
		if isLoop(err) {
			if fi, lerr := os.Lstat(path); lerr == nil && fi.Mode()&fs.ModeSymlink != 0 {
				return nil, notRegular(path, fi.Mode())
			}
		}
		if fi, lerr := os.Lstat(path); lerr == nil && !fi.Mode().IsRegular() {
			// Opening a directory for writing, a socket, ...: say what it is.
			return nil, notRegular(path, fi.Mode())
		}
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		_ = f.Close()
		return nil, notRegular(path, fi.Mode())
	}
	return f, nil
}

// Open opens path for reading, as OpenFile does.
func Open(path string) (*os.File, error) { return OpenFile(path, os.O_RDONLY, 0) }

// ReadFile reads the whole regular file at path, as os.ReadFile does, but
// opened as Open opens it. A missing file is an error wrapping
// fs.ErrNotExist.
func ReadFile(path string) ([]byte, error) {
	f, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var size int64
	if fi, err := f.Stat(); err == nil {
		size = fi.Size()
	}
	data := make([]byte, 0, size+512)
	for {
		n, err := f.Read(data[len(data):cap(data)])
		data = data[:len(data)+n]
		if err == io.EOF {
			return data, nil
		}
		if err != nil {
			return nil, &os.PathError{Op: "read", Path: path, Err: err}
		}
		if len(data) == cap(data) {
			data = append(data, 0)[:len(data)]
		}
	}
}

// Kind names what mode describes, for messages: "regular file",
// "symbolic link", "FIFO", "socket", "device", "directory", ...
func Kind(mode fs.FileMode) string {
	switch {
	case mode.IsRegular():
		return "regular file"
	case mode&fs.ModeSymlink != 0:
		return "symbolic link"
	case mode.IsDir():
		return "directory"
	case mode&fs.ModeNamedPipe != 0:
		return "FIFO"
	case mode&fs.ModeSocket != 0:
		return "socket"
	case mode&fs.ModeCharDevice != 0:
		return "character device"
	case mode&fs.ModeDevice != 0:
		return "device"
	}
	return "special file"
}

func notRegular(path string, mode fs.FileMode) error {
	what := Kind(mode)
	if mode&fs.ModeSymlink != 0 {
		return fmt.Errorf("%w: %s is a %s; refusing to follow it", ErrNotRegular, path, what)
	}
	return fmt.Errorf("%w: %s is a %s", ErrNotRegular, path, what)
}
