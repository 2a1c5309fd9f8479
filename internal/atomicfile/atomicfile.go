// Package atomicfile replaces a file's contents so that a reader, or a
// restart after a crash at any instant, sees either the old contents or the
// new ones, never a mix: write a temporary file in the same directory, fsync
// it, close it, rename it over the target, then fsync the directory so the
// rename itself is durable.
//
// The file system is injected so tests can fail any step.
package atomicfile

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// File is the part of *os.File that a write needs.
type File interface {
	io.Writer
	Name() string
	Sync() error
	Close() error
}

// FS is the part of a file system that a write needs. OS is the real one.
type FS interface {
	CreateTemp(dir, pattern string) (File, error)
	Rename(oldpath, newpath string) error
	Remove(name string) error
	SyncDir(dir string) error
}

// OS is the operating system's file system.
type OS struct{}

// CreateTemp creates a new temporary file in dir (os.CreateTemp).
func (OS) CreateTemp(dir, pattern string) (File, error) { return os.CreateTemp(dir, pattern) }

// Rename renames oldpath to newpath (os.Rename).
func (OS) Rename(oldpath, newpath string) error { return os.Rename(oldpath, newpath) }

// Remove removes name (os.Remove).
func (OS) Remove(name string) error { return os.Remove(name) }

// SyncDir fsyncs the directory dir so that a rename inside it is durable.
func (OS) SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// ErrDirSync marks a failure of the last step: the new contents replaced
// the target, but the rename may not survive a crash. Readers of the
// directory already see the new contents.
var ErrDirSync = errors.New("directory fsync failed")

// TempPattern is the name pattern of temporary files: <target>.tmp-*.
// Loaders never take one for the target: it is the leftover of a write
// that did not finish, and its owner may remove it once it holds the data
// directory's lock (offsets.Open does).
const TempPattern = ".tmp-*"

// Write atomically replaces path with data on fs. On error the target is
// untouched and the temporary file is removed; the error names the step and
// the path.
func Write(fs FS, path string, data []byte) (err error) {
	dir := filepath.Dir(path)
	f, err := fs.CreateTemp(dir, filepath.Base(path)+TempPattern)
	if err != nil {
		return fmt.Errorf("create temp file for %s: %w", path, err)
	}
	tmp := f.Name()
	renamed := false
	defer func() {
		if err != nil && !renamed {
			_ = fs.Remove(tmp)
		}
	}()
	if _, err = f.Write(data); err != nil {
		_ = f.Close()
		return fmt.Errorf("write %s: %w", tmp, err)
	}
	if err = f.Sync(); err != nil {
		_ = f.Close()
		return fmt.Errorf("fsync %s: %w", tmp, err)
	}
	if err = f.Close(); err != nil {
		return fmt.Errorf("close %s: %w", tmp, err)
	}
	if err = fs.Rename(tmp, path); err != nil {
		return fmt.Errorf("rename %s to %s: %w", tmp, path, err)
	}
	renamed = true
	if err = fs.SyncDir(dir); err != nil {
		// The rename happened; only its durability is in doubt.
		return fmt.Errorf("%w: %s: %w", ErrDirSync, dir, err)
	}
	return nil
}
