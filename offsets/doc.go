// Package offsets is the durable committed-offset store: for each consumer
// group, the next offset to consume for each topic partition.
//
// A Store opened on a data directory keeps the chapter's offsets.json (book chapter 7, "Generation
// fencing protects committed progress"): one JSON document, sorted, replaced
// atomically by temp file + fsync + rename + directory fsync. NewMemory
// returns a Store that keeps the same data in memory only, for tests and
// labs.
//
// Commits are ordered when they are enqueued and made durable when their
// wait function runs, so a caller can fix the order of commits under its own
// lock and wait for the disk outside it. Concurrent commits share one write
// and one fsync.
//
// The package imports only the standard library and internal/atomicfile: it
// knows nothing of groups' members, generations or the wire.
package offsets
