package records

import (
	"os"
	"syscall"
)

// oNoFollow makes opening a symlink fail with ELOOP.
const oNoFollow = syscall.O_NOFOLLOW

// syncData makes appended data durable with fdatasync(2): it flushes the
// data and the metadata needed to read it back (the file size) and skips
// the modification time, which is all an append needs (the same reasoning
// as offsets' journal). The segment's directory entry is made durable
// separately, once, when the segment is created.
func syncData(f *os.File) error {
	for {
		err := syscall.Fdatasync(int(f.Fd()))
		if err != syscall.EINTR {
			return err
		}
	}
}

// allocate reserves the blocks of bytes [off, off+n) of f with
// fallocate(2) mode 0, which also moves the file's size to off+n if it was
// shorter: the bytes read as zeros until written. Mode 0 and not
// FALLOC_FL_KEEP_SIZE: what makes the fdatasync after a write into the
// space cheaper is that the size it must write back has not changed, and
// KEEP_SIZE leaves the size behind (measured: no gain). A file system
// without fallocate answers EOPNOTSUPP; the caller then appends plainly.
func allocate(f *os.File, off, n int64) error {
	for {
		err := syscall.Fallocate(int(f.Fd()), 0, off, n)
		if err != syscall.EINTR {
			return err
		}
	}
}

// openFileLimit returns the process's limit of open files (RLIMIT_NOFILE,
// which the Go runtime raises to its hard limit at start), 0 if unknown.
func openFileLimit() int64 {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil || lim.Cur > 1<<40 {
		return 0
	}
	return int64(lim.Cur)
}
