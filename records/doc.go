// Package records owns the partition logs: durable, append-only logs of
// Kafka record batches (magic 2), one per topic partition, in Kafka's own
// on-disk layout. A partition lives in <Dir>/<topic>-<partition>/ as
// segment files of batches back to back, each named by the offset of its
// first record in 20 digits (00000000000000000000.log), so the bytes on
// disk are the bytes on the wire. It owns batch validation (Log.Validate,
// as Kafka's LogValidator), offset assignment, durability with group
// commit, idempotent producer state and ids, reads for Fetch, offset
// lookups for ListOffsets, long-poll waiters, segment rolling, retention
// by bytes, and recovery at Open.
//
// # Durability and visibility
//
// Log.Append validates nothing itself beyond producer sequences: it takes
// a Batch from Log.Validate, writes it at the log end and returns a
// Pending. Pending.Wait starts a flush round (group commit): the flusher
// takes every partition with appends not yet durable, across all
// producers, syncs each touched file once (fdatasync, several files at
// once), and wakes exactly the appends each sync covered. A Produce
// handler appends all its partitions' batches before it waits, so one
// request costs one round; one that does not wait (acks=0) calls
// Log.Flush instead, or its batches stay invisible until someone's round
// takes them. The high
// watermark is the durable log end: Read and the lookups never show a
// byte above it, so no consumer sees a record a crash can take back
// (stricter than Kafka with one replica). If a write or sync fails, every
// append of that partition not yet durable fails with ErrStorage, and the
// partition's file and memory (log end, producer state) go back to the
// durable end; other partitions are unaffected.
//
// # Transactions
//
// A transactional batch opens its producer's transaction on the
// partition; a marker (AppendMarker, control.go) closes it. Each
// partition keeps its open transactions, those whose marker is not yet
// durable, and its aborted ones (lso.go). The last stable offset is the
// first offset of the oldest transaction not durably ended, else the high
// watermark; ReadCommittedAlloc stops there and reports the aborted
// transactions of the range read. Which batches may be appended is the
// transaction coordinator's business (package txn); this package only
// keeps what the log says. The recovery walk rebuilds all of it.
//
// # Recovery
//
// Open walks every segment by batch headers (index, timestamps, producer
// state) and checks the newest segment's batches whole. A torn or corrupt
// tail of the newest segment is cut at the last whole valid batch and kept
// beside it as <segment>.cut-<n>; damage anywhere else fails Open with
// ErrCorrupt naming the file and byte. Zeros from a batch boundary to the
// end of the newest segment are space allocated ahead (below) and are
// truncated silently; a batch torn over them is a torn tail, its own
// bytes kept. See recover.go. Open then holds
// the logs against the checkpoint (checkpoint.go: every partition's log
// start and high watermark, written periodically, before retention
// deletes and at Close): a partition below it lost acknowledged records
// while the broker was down, and Open fails with ErrDataLoss unless
// Config.AcceptDataLoss.
//
// # Preallocation
//
// On Linux the active segment is allocated ahead of its writes with
// fallocate(2) mode 0, in chunks of up to 1 MiB and never past
// SegmentBytes, so that the fdatasync after a small append does not also
// write back a new file size (prealloc.go; Kafka's counterpart,
// log.preallocate, off by default, sizes whole segments up front). So the active segment's
// length on disk may exceed its data until it is rolled or closed: the
// data's end is segment.size, and every read stops there. A roll
// truncates the segment it seals before the sync that seals it, and a
// clean Close truncates the active one: sealed segments, and the files a
// clean Close leaves, hold exactly their batches. A failed fallocate
// costs only the speed: the segment is appended to plainly.
//
// # File descriptors
//
// Only each partition's active segment keeps its file open. Reads of
// older segments go through a bounded cache of open files (filecache.go);
// a read or flush using the active file outside the partition's mutex
// counts itself on the segment, so a roll closes it only once they are
// done. Every batch a read serves is checked against its CRC: a damaged
// one fails the read with ErrCorruptMessage.
//
// # Memory
//
// Reads go from the files through caller-bounded buffers (no mmap). What
// grows with the data held is the sparse index, 16 bytes per 8 KiB of
// batches (2 MiB per GiB), and a little per segment. Producer state is
// bounded by Config.MaxProducers per partition.
//
// # Concurrency
//
// Each partition has its own mutex (partition.mu): appends to one
// partition are ordered by it, and no lock is shared by appends to
// different partitions (the partition map is copy-on-write). Validation
// runs outside every lock. Lock order, outermost first:
//
//	Log.createMu -> partition.mu -> flusher.mu
//	partition.mu and partition.wmu are never held together
//
// Flush rounds run in the flusher goroutine or in a goroutine waiting in
// Pending.Wait, several at once; a partition is in at most one of them
// (partition.inflight).
//
// producerIDs.mu, fileCache.mu, limitedLog.mu and the memFS mutexes are
// leaves; checkpointer.mu is taken with no partition lock held. Flush rounds sync
// files without partition.mu; writes (to the page cache) are made under
// it, and so is the one sync of a segment being rolled (once per
// SegmentBytes), which keeps every byte that is not durable in the newest
// segment, the only place recovery cuts. So are the fallocate that
// allocates the active segment ahead (once per chunk) and the truncate
// that trims it at a roll.
//
// # Boundaries
//
// The package imports the standard library, the compression libraries
// (klauspost/compress, pierrec/lz4) and internal/atomicfile. It must not
// import net, net/http, kmsg, kerr, kgo, or our server, coordinator or
// protocol packages: the server translates Produce, Fetch, ListOffsets and
// InitProducerId into calls here and maps the error sentinels to Kafka
// codes.
package records
