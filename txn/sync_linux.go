package txn

import (
	"os"
	"syscall"
)

// syncData makes journal appends durable: fdatasync(2) flushes the data
// and the file size, all an append needs, and skips the modification
// time.
func syncData(f *os.File) error {
	for {
		err := syscall.Fdatasync(int(f.Fd()))
		if err != syscall.EINTR {
			return err
		}
	}
}
