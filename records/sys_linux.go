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

// openFileLimit returns the process's limit of open files (RLIMIT_NOFILE,
// which the Go runtime raises to its hard limit at start), 0 if unknown.
func openFileLimit() int64 {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil || lim.Cur > 1<<40 {
		return 0
	}
	return int64(lim.Cur)
}
