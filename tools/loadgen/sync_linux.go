package loadgen

import (
	"os"
	"syscall"
)

// fdatasync makes f's data durable with fdatasync(2), as minibroker's
// partition logs do.
func fdatasync(f *os.File) error {
	for {
		err := syscall.Fdatasync(int(f.Fd()))
		if err != syscall.EINTR {
			return err
		}
	}
}
