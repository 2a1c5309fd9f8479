package records

import (
	"errors"
	"fmt"
)

// Preallocation. The fdatasync after an append must write back the
// file's new size with the data; after a write into space the file was
// given beforehand (fallocate(2) mode 0), the size has not changed and
// the fdatasync costs less. Measured on ext4 without a journal, a
// 1,100-byte write and fdatasync per record: 220-240 µs p50 and 118-135
// µs of system CPU per sync appended at the end of the file, 157-188 µs
// and 72-108 µs written into space allocated ahead (FALLOC_FL_KEEP_SIZE
// gave nothing: the size still moves at each write). For 256 KiB writes
// it made no difference, so batched produce is unchanged. So the active
// segment is allocated a chunk ahead of its writes, and one fdatasync per
// chunk carries the new size. Kafka's counterpart is log.preallocate,
// off by default, which creates each segment at its full segment.bytes
// length and trims it when the segment is rolled (FileRecords.trim).
//
// The space is allocated, not filled with zeros as the offsets journal
// does (offsets/journal_writer.go): a batch may be a megabyte, and
// writing zeros ahead of it doubles the disk writes.
//
// So the file's length is no longer the data's end; segment.size is.
// Every read stops at segment.size (or the durable size), never at the
// end of the file. A roll truncates the segment it seals to its data
// before the sync that seals it, so sealed segments hold no zeros; a
// clean Close truncates the active segment too, so the files a clean
// shutdown leaves hold exactly their batches. A crash leaves the space
// allocated past the last write: zeros from a batch boundary to the end
// of the file, which recovery truncates silently (recover.go).
//
// Allocation only speeds appends up: where it fails (EOPNOTSUPP on a file
// system without fallocate, ENOSPC), the segment is appended to plainly
// and no append fails for it. Only osFS files on Linux allocate; memFS
// files do when a test sets memFS.allocates.

// preallocChunkBytes is how far ahead of its writes the active segment is
// allocated, when the segment has that much room left before
// segment.bytes (it rolls there, and the space past its data would be
// truncated unused). One fdatasync per chunk carries the file's new size:
// with 1 KiB batches one in about a thousand, so a larger chunk would
// gain nothing measurable, while every active segment can hold up to a
// chunk of allocated space until it is rolled or closed (1 GiB over a
// thousand partitions).
const preallocChunkBytes = 1 << 20

// allocate makes sure the file of s, the active segment, has space for a
// write ending at end, allocating up to a chunk past it, within
// segmentBytes. A failure is only logged (at Debug, once per Log): the
// segment is then appended to plainly. Called with the partition's mu
// held, before the write.
func (p *partition) allocate(s *segment, end, segmentBytes int64) {
	chunk := p.l.cfg.preallocBytes
	if chunk <= 0 || s.noAlloc || end <= s.fileEnd {
		return
	}
	target := end + min(chunk, segmentBytes-end)
	if target <= end {
		return // the write fills the segment: the next one rolls it
	}
	from := max(s.size, s.fileEnd)
	err := s.f.Allocate(from, target-from)
	if err == nil {
		s.fileEnd = target
		return
	}
	s.noAlloc = true
	if errors.Is(err, errors.ErrUnsupported) {
		return // nothing changed; not a file system that allocates
	}
	s.fileEnd = max(s.fileEnd, target) // it may have grown part of the way: trim cuts it back
	if !p.l.allocFailed.Swap(true) {
		p.l.cfg.Logger.Debug("cannot allocate segment space ahead; appending plainly",
			"topic", p.tp.Topic, "partition", p.tp.Partition, "file", s.path, "err", err)
	}
}

// trim truncates the file of s to its data if allocation took it past.
// Called with the partition's mu held.
func (s *segment) trim() error {
	if s.fileEnd <= s.size {
		return nil
	}
	if err := s.f.Truncate(s.size); err != nil {
		return fmt.Errorf("truncate %s to %d: %w", s.path, s.size, err)
	}
	s.fileEnd = s.size
	return nil
}

// trimActive truncates the active segment's file to its data, at Close
// after the last flush round: a clean shutdown leaves every file exactly
// its batches, as without preallocation. The cut is not synced: a crash
// that undoes it leaves zeros past the batches, which Open truncates
// (recover.go), and a sync per partition would make a stop with many
// partitions slow. A partition whose rollback failed is left alone: its
// memory no longer says where its file's batches end, and Open finds out.
func (p *partition) trimActive() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	a := p.active()
	if p.broken != nil || a.f == nil {
		return nil
	}
	return a.trim()
}
