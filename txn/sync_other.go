//go:build !linux

package txn

import "os"

// syncData falls back to fsync where fdatasync(2) is not available.
func syncData(f *os.File) error { return f.Sync() }
