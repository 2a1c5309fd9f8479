//go:build linux || darwin || dragonfly || freebsd || netbsd || openbsd

package datadir

import (
	"errors"
	"os"
	"syscall"
)

// acquire opens the lock file at path, creating it if needed, and takes
// flock(2) LOCK_EX|LOCK_NB on it. The lock belongs to the open file
// description: the kernel drops it when the last descriptor closes, which
// is why a killed holder never leaves a stale lock. A second open of the
// same file, even in this process, conflicts with it.
func acquire(path string) (*os.File, error) {
	f, err := OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		_ = f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, errLocked
		}
		return nil, &os.PathError{Op: "flock", Path: path, Err: err}
	}
	return f, nil
}

// release closes the lock file, which drops the lock. The file stays: a
// holder that removed it could free the lock for a process that opened the
// old file while a third created a new one.
func release(f *os.File, _ string) error { return f.Close() }
