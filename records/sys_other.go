//go:build !linux

package records

import "os"

// oNoFollow is not available everywhere; OpenFile's Lstat and Stat checks
// still refuse anything but a regular file.
const oNoFollow = 0

// syncData makes appended data durable: fsync, where fdatasync is not in
// the standard library.
func syncData(f *os.File) error { return f.Sync() }

// openFileLimit is unknown here: partitions are bounded by the catalog's
// cap alone.
func openFileLimit() int64 { return 0 }
