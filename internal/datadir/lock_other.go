//go:build !(linux || darwin || dragonfly || freebsd || netbsd || openbsd)

package datadir

import (
	"errors"
	"io/fs"
	"os"
)

// acquire creates the lock file at path exclusively (O_EXCL): where the
// standard library offers no flock, the file's existence is the lock. A
// holder that dies without Release leaves it behind, and the next Lock
// fails naming the dead pid until someone removes the file.
func acquire(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, fs.ErrExist) {
		return nil, errLocked
	}
	return f, err
}

// release closes and removes the lock file.
func release(f *os.File, path string) error {
	err := f.Close()
	if rerr := os.Remove(path); err == nil {
		err = rerr
	}
	return err
}
