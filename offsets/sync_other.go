//go:build !linux

package offsets

import "github.com/minibroker/minibroker/internal/atomicfile"

// syncData makes a journal append durable: fsync, where fdatasync is not
// in the standard library.
func syncData(f atomicfile.File) error { return f.Sync() }
