package offsets

import (
	"os"
	"syscall"

	"github.com/minibroker/minibroker/internal/atomicfile"
)

// syncData makes a journal append durable. On Linux a real file gets
// fdatasync(2): it flushes the data and the metadata needed to read it back
// (the file size), which is all an append needs, and skips the
// modification time; the segment's directory entry was made durable when
// the segment was created. Measured here it costs about a fifth less CPU
// than fsync. Any other File (a test's wrapper) is synced through its own
// Sync, so injected failures still apply.
func syncData(f atomicfile.File) error {
	if osf, ok := f.(*os.File); ok {
		for {
			err := syscall.Fdatasync(int(osf.Fd()))
			if err != syscall.EINTR {
				return err
			}
		}
	}
	return f.Sync()
}
