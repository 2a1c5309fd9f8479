// Package offsets is the durable committed-offset store: for each consumer
// group, the next offset to consume for each topic partition.
//
// A Store opened on a data directory keeps the chapter's offsets.json (book
// chapter 7, "Generation fencing protects committed progress"): one JSON
// document, sorted, replaced atomically by temp file + fsync + rename +
// directory fsync. Memory (NewMemory) is its in-memory twin, for tests
// and labs: the same methods and order, no files.
//
// Where the chapter rewrites offsets.json on every commit, at a cost that
// grows with the number of offsets stored, a commit here appends one
// record to a journal beside it (offsets.journal.<n>: length, CRC-32C,
// compact binary batch; journal.go) with one write and one fsync, whatever
// the number of offsets stored, written over zeros filled ahead of it so
// that the fsync need not write the file's size too (journal_writer.go).
// offsets.json stays the readable snapshot:
// Open replays the journal over it (open.go); a background fold rewrites
// it once the journal has grown as large as the snapshot (or
// Config.CompactBytes), the way Kafka compacts __consumer_offsets, and
// Close folds the rest, so a cleanly stopped broker leaves only
// offsets.json. The crash-safety argument for each step is in writer.go
// (appends), compact.go (folds) and segment.go (what Open cuts and what it
// refuses).
//
// Commits, and deletes (Delete, DeleteOffsets, Expire: Kafka's
// DeleteGroups, OffsetDelete and offsets retention), are ordered when they
// are enqueued and made durable when their wait function runs, so a
// caller can fix the order under its own lock and wait for the disk
// outside it. Concurrent ops, from any groups, share one journal record,
// one write and one fsync (group commit); each is acknowledged once that
// fsync returned. A delete is journaled as a tombstone.
//
// Files: offsets.go (entries, validation, the ops and the table they
// change), store.go (the Store's state and methods), open.go, writer.go,
// compact.go, journal.go (record format), segment.go (segment files),
// file.go (offsets.json), memory.go, ratelog.go (rate-limited events).
//
// Lock order: Store.mu is the only lock of a Store, Memory.mu of a Memory;
// no file I/O runs under either. The rate-limited event log's mutex
// (ratelog.go) is a leaf: taken only with no other lock held.
//
// One process owns a data directory: the caller holds its lock
// (internal/datadir) before Open. The package imports only the standard
// library, internal/atomicfile and internal/datadir: it knows nothing of
// groups' members, generations or the wire.
package offsets
