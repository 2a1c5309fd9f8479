// Package datadir guards a broker's data directory: one process owns it at
// a time (Lock), and the files read from it are what their names claim, a
// regular file, never a symbolic link followed out of the directory, a FIFO
// that blocks the reader, or a directory (Open, ReadFile).
//
// Lock comes first: a broker takes it before it opens, reads or repairs
// anything in the directory, and holds it for the life of the process
// (docs/design.md section 6). Every package that keeps files there (offsets, the
// topic catalog, the partition logs) then reads them through Open or
// ReadFile.
//
// The package imports only the standard library.
package datadir
