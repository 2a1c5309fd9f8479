package datadir

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"
)

// LockName is the lock file's name inside the data directory.
const LockName = ".lock"

// releaseWait bounds how long Lock waits for a lock whose file names no
// holder (one just released, or taken a moment ago): about one second in
// all, doubling from a millisecond.
const releaseWait = 512 * time.Millisecond

// ErrInUse is returned by Lock when another process holds the directory.
var ErrInUse = errors.New("data dir in use")

// Dir is a data directory this process holds the lock of. It is safe for
// concurrent use.
type Dir struct {
	path, lockPath string

	mu sync.Mutex
	f  *os.File // the locked lock file; nil once released. Guarded by mu.
}

// Lock takes the exclusive lock of the data directory dir, without
// waiting: <dir>/.lock, created if missing (never through a symbolic link,
// and only if it is a regular file), locked with flock(2) LOCK_EX|LOCK_NB
// where the system has it. The lock is tied to the open file, so it ends
// with the process however the process ends, SIGKILL included; Release
// ends it earlier. The file records the holder's pid, host and the time it
// took the lock, which a second Lock names in its error (wrapping
// ErrInUse):
//
//	data dir /x is in use by another minibroker (pid 1234, lock /x/.lock)
//
// Lock does not create dir.
func Lock(dir string) (*Dir, error) {
	path := filepath.Join(dir, LockName)
	f, err := acquire(path)
	// A holder that names nobody has just released the lock (Release
	// empties the file first) or has not yet written its name. The lock
	// may still look taken for a moment after a release: a child this
	// process forks holds a copy of every descriptor until it execs. Try
	// again for a while before calling it in use; a named holder is
	// refused at once.
	for wait := time.Millisecond; errors.Is(err, errLocked) && wait <= releaseWait; wait *= 2 {
		if pid, _, _ := readHolder(path); pid > 0 {
			break
		}
		time.Sleep(wait)
		f, err = acquire(path)
	}
	if errors.Is(err, errLocked) {
		return nil, inUse(dir, path)
	}
	if err != nil {
		return nil, fmt.Errorf("lock data dir %s: %w", dir, err)
	}
	if err := writeHolder(f); err != nil {
		_ = release(f, path)
		return nil, fmt.Errorf("lock data dir %s: write %s: %w", dir, path, err)
	}
	return &Dir{path: dir, lockPath: path, f: f}, nil
}

// Path returns the directory's path, as given to Lock.
func (d *Dir) Path() string { return d.path }

// LockPath returns the lock file's path.
func (d *Dir) LockPath() string { return d.lockPath }

// Release gives the lock up. It is idempotent; only the first call can
// return an error.
func (d *Dir) Release() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.f == nil {
		return nil
	}
	// Forget the holder first, so nobody reads a stale pid as ours.
	_ = d.f.Truncate(0)
	err := release(d.f, d.lockPath)
	d.f = nil
	if err != nil {
		return fmt.Errorf("release data dir %s: %w", d.path, err)
	}
	return nil
}

// errLocked is what acquire returns when another open file holds the lock.
var errLocked = errors.New("locked")

// writeHolder records who holds the lock: informational only, read by the
// next Lock that fails. It is not fsynced: after a crash the lock is free
// anyway.
func writeHolder(f *os.File) error {
	host, _ := os.Hostname()
	var b bytes.Buffer
	fmt.Fprintf(&b, "pid=%d\nhost=%s\nsince=%s\n", os.Getpid(), host, time.Now().UTC().Format(time.RFC3339))
	if err := f.Truncate(0); err != nil {
		return err
	}
	_, err := f.WriteAt(b.Bytes(), 0)
	return err
}

// inUse builds Lock's error for a directory another process holds.
func inUse(dir, path string) error {
	pid, host, since := readHolder(path)
	who := "pid unknown"
	if pid > 0 {
		who = "pid " + strconv.Itoa(pid)
	}
	if host != "" {
		who += " on " + host
	}
	if since != "" {
		who += " since " + since
	}
	return fmt.Errorf("%w: data dir %s is in use by another minibroker (%s, lock %s)", ErrInUse, dir, who, path)
}

// readHolder parses what writeHolder wrote; zero values where the file
// says nothing (the holder may not have written it yet).
func readHolder(path string) (pid int, host, since string) {
	data, err := ReadFile(path)
	if err != nil {
		return 0, "", ""
	}
	for line := range bytes.Lines(data) {
		k, v, ok := bytes.Cut(bytes.TrimSpace(line), []byte("="))
		if !ok {
			continue
		}
		switch string(k) {
		case "pid":
			pid, _ = strconv.Atoi(string(v))
		case "host":
			host = string(v)
		case "since":
			since = string(v)
		}
	}
	return pid, host, since
}
