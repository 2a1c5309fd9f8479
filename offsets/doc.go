// Package offsets is the durable committed-offset store: for each consumer
// group, the next offset to consume for each topic partition.
//
// A Store opened on a data directory keeps the chapter's offsets.json (book
// chapter 7, "Generation fencing protects committed progress"): one JSON
// document, sorted, replaced atomically by temp file + fsync + rename +
// directory fsync. NewMemory returns a Store that keeps the same data in
// memory only, for tests and labs.
//
// Where the chapter rewrites offsets.json on every commit, at a cost that
// grows with the number of offsets stored, a commit here appends one
// record to a journal beside it (offsets.journal.<n>: length, CRC-32C,
// compact binary batch) with one write and one fsync, whatever the number
// of offsets stored. offsets.json stays the readable snapshot: Open replays
// the journal over it; a background fold rewrites it once the journal has
// grown as large as the snapshot (or Config.CompactBytes), the way Kafka
// compacts __consumer_offsets, and Close folds the rest, so a cleanly
// stopped broker leaves only offsets.json. The crash-safety argument for
// each step is in writer.go (appends) and compact.go (folds).
//
// Commits are ordered when they are enqueued and made durable when their
// wait function runs, so a caller can fix the order of commits under its own
// lock and wait for the disk outside it. Concurrent commits, from any
// groups, share one journal record, one write and one fsync (group commit);
// each is acknowledged once that fsync returned.
//
// Lock order: Store.mu is the only lock; no file I/O runs under it.
//
// The package imports only the standard library and internal/atomicfile: it
// knows nothing of groups' members, generations or the wire.
package offsets
