package records

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"

	"github.com/minibroker/minibroker/internal/atomicfile"
)

// segmentFile is what a partition needs of one file: positional reads and
// writes (so readers never share a file offset with the writer), a data
// sync, a truncate to take a failed write back, and space allocated ahead
// of the writes (partition.allocate). osFile and memFile implement it.
type segmentFile interface {
	io.ReaderAt
	io.WriterAt
	// Sync makes every byte written so far durable (fdatasync on Linux).
	Sync() error
	Truncate(size int64) error
	// Allocate reserves disk blocks for bytes [off, off+n) and makes the
	// file at least off+n long, the new bytes reading as zeros
	// (fallocate(2) mode 0). It fails with errors.ErrUnsupported, the
	// file unchanged, where there is no such call; after any other error
	// the file may have grown part of the way.
	Allocate(off, n int64) error
	Close() error
}

// entryKind is what a directory entry is.
type entryKind int8

const (
	kindOther entryKind = iota // symlink, FIFO, device, socket
	kindFile
	kindDir
)

// dirEntry is one name in a directory, as the directory itself says it
// is: a symlink is kindOther whatever it points to.
type dirEntry struct {
	name string
	kind entryKind
}

// fileSystem is the part of a file system a Log uses. osFS is the real one,
// memFS keeps files in memory (Config.Dir ""); tests wrap either to
// inject failures.
type fileSystem interface {
	MkdirAll(dir string) error
	// ReadDir lists dir sorted by name.
	ReadDir(dir string) ([]dirEntry, error)
	// OpenFile opens the regular file at path for reading and writing and
	// returns its size. With create, the file must not exist yet.
	// Symlinks are never followed: a path that is not a regular file
	// fails with an error wrapping errNotRegular.
	OpenFile(path string, create bool) (segmentFile, int64, error)
	// Remove removes a file or an empty directory.
	Remove(path string) error
	// Rename moves a file or directory to a new name in the same
	// directory.
	Rename(oldPath, newPath string) error
	// SyncDir makes the entries of dir (created, removed) durable.
	SyncDir(dir string) error
	// ReadFile returns a small file's contents; fs.ErrNotExist if absent.
	ReadFile(path string) ([]byte, error)
	// WriteFileAtomic replaces path's contents atomically and durably.
	WriteFileAtomic(path string, data []byte) error
}

// errNotRegular marks a path that should be a regular file and is not.
var errNotRegular = errors.New("not a regular file")

// osFS is the operating system's file system.
type osFS struct{}

func (osFS) MkdirAll(dir string) error { return os.MkdirAll(dir, 0o755) }

func (osFS) ReadDir(dir string) ([]dirEntry, error) {
	des, err := os.ReadDir(dir) // sorted by name
	if err != nil {
		return nil, err
	}
	out := make([]dirEntry, 0, len(des))
	for _, de := range des {
		e := dirEntry{name: de.Name()}
		switch t := de.Type(); {
		case t.IsRegular():
			e.kind = kindFile
		case t.IsDir():
			e.kind = kindDir
		}
		out = append(out, e)
	}
	return out, nil
}

func (osFS) OpenFile(path string, create bool) (segmentFile, int64, error) {
	flags := os.O_RDWR | oNoFollow
	if create {
		flags |= os.O_CREATE | os.O_EXCL
	} else {
		// Look before opening: opening a FIFO or a device can block or
		// have effects. The check after opening closes the race.
		fi, err := os.Lstat(path)
		if err != nil {
			return nil, 0, err
		}
		if !fi.Mode().IsRegular() {
			return nil, 0, fmt.Errorf("%s: %w (%s)", path, errNotRegular, fi.Mode().Type())
		}
	}
	f, err := os.OpenFile(path, flags, 0o644)
	if errors.Is(err, syscall.ELOOP) {
		return nil, 0, fmt.Errorf("%s: %w (symlink)", path, errNotRegular)
	}
	if err != nil {
		return nil, 0, err
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = fmt.Errorf("%s: %w (%s)", path, errNotRegular, fi.Mode().Type())
	}
	if err != nil {
		_ = f.Close()
		return nil, 0, err
	}
	return osFile{f}, fi.Size(), nil
}

func (osFS) Remove(path string) error { return os.Remove(path) }

func (osFS) Rename(oldPath, newPath string) error { return os.Rename(oldPath, newPath) }

func (osFS) SyncDir(dir string) error { return atomicfile.OS{}.SyncDir(dir) }

func (osFS) ReadFile(path string) ([]byte, error) { return os.ReadFile(path) }

func (osFS) WriteFileAtomic(path string, data []byte) error {
	return atomicfile.Write(atomicfile.OS{}, path, data)
}

// osFile is a file of osFS.
type osFile struct{ *os.File }

// Sync flushes the data written so far and the metadata needed to read it
// back (syncData: fdatasync on Linux).
func (f osFile) Sync() error { return syncData(f.File) }

// Allocate is fallocate(2) mode 0 on Linux (allocate); elsewhere
// errors.ErrUnsupported.
func (f osFile) Allocate(off, n int64) error { return allocate(f.File, off, n) }

// isNotExist reports whether err says a file does not exist.
func isNotExist(err error) bool { return errors.Is(err, fs.ErrNotExist) }
