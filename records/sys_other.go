//go:build !linux

package records

import (
	"errors"
	"os"
)

// oNoFollow is not available everywhere; OpenFile's Lstat and Stat checks
// still refuse anything but a regular file.
const oNoFollow = 0

// syncData makes appended data durable: fsync, where fdatasync is not in
// the standard library.
func syncData(f *os.File) error { return f.Sync() }

// allocate is fallocate(2) where there is one; here the active segment
// grows by its appends alone.
func allocate(*os.File, int64, int64) error { return errors.ErrUnsupported }

// openFileLimit is unknown here: partitions are bounded by the catalog's
// cap alone.
func openFileLimit() int64 { return 0 }
