package records

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
)

// scratchBytes is the window a read or lookup scans batch headers
// through: twice the index interval, so one read usually covers the scan
// from an index entry to the batch wanted.
const scratchBytes = 2 * indexIntervalBytes

// ReadResult is what Read returns.
type ReadResult struct {
	// Records holds whole stored batches, back to back, as a Fetch
	// response carries them; empty at the high watermark. It is buf's
	// array when buf was large enough.
	Records []byte
	// HighWatermark is the offset after the last durable record: no
	// read or lookup shows anything at or past it.
	HighWatermark int64
	// LogStartOffset is the first offset the log holds.
	LogStartOffset int64
	// LastStableOffset is the first offset of the oldest transaction not
	// durably ended, else the high watermark (lso.go).
	LastStableOffset int64
	// Aborted lists, for a read_committed read (ReadCommittedAlloc), the
	// aborted transactions of the range read, oldest marker first.
	Aborted []AbortedTxn
}

// Read returns whole stored batches starting with the one that holds
// offset (which may begin before offset: the client skips what it did not
// ask for), as many as fit in maxBytes, never past the high watermark.
// They are read from the files into buf (appended to buf[:0]; it grows
// only up to maxBytes, or to the size of the first batch if atLeastOne).
// With atLeastOne the first batch is returned even when it is larger than
// maxBytes (KIP-74): Fetch sets it for the first partition of a response
// that has no data yet. Offset == high watermark returns no records and no
// error; below the log start or above the high watermark it returns
// ErrOffsetOutOfRange (with the offsets filled in).
func (l *Log) Read(topic string, partition int32, offset int64, maxBytes int32, atLeastOne bool, buf []byte) (ReadResult, error) {
	return l.read(topic, partition, offset, maxBytes, atLeastOne, buf[:0], nil, false)
}

// ReadAlloc is Read into a buffer from alloc, which is asked only once
// the size of what will be read is known: alloc(n) returns an empty
// slice with room for at least n bytes. It is not called when there is
// nothing to read, and more than once only when a read runs on into the
// next segment (the bytes read so far are copied over). A server that
// reuses its buffers sizes each to the read this way.
func (l *Log) ReadAlloc(topic string, partition int32, offset int64, maxBytes int32, atLeastOne bool, alloc func(n int) []byte) (ReadResult, error) {
	return l.read(topic, partition, offset, maxBytes, atLeastOne, nil, alloc, false)
}

// ReadCommittedAlloc is ReadAlloc at isolation level read_committed:
// nothing at or past the last stable offset, and the aborted
// transactions of the range read (Kafka's FetchIsolation.TXN_COMMITTED).
func (l *Log) ReadCommittedAlloc(topic string, partition int32, offset int64, maxBytes int32, atLeastOne bool, alloc func(n int) []byte) (ReadResult, error) {
	return l.read(topic, partition, offset, maxBytes, atLeastOne, nil, alloc, true)
}

func (l *Log) read(topic string, partition int32, offset int64, maxBytes int32, atLeastOne bool, out []byte, alloc func(int) []byte, committed bool) (ReadResult, error) {
	p, err := l.partition(topic, partition)
	if err != nil {
		return ReadResult{}, err
	}
	sp := l.getScratch()
	defer l.scratch.Put(sp)
	o := readOut{buf: out, alloc: alloc, committed: committed}
	res, err := p.read(offset, int64(maxBytes), atLeastOne, o, *sp)
	if err == nil && o.committed {
		p.mu.Lock()
		res.Aborted = p.txns.abortedIn(offset, res.LastStableOffset)
		p.mu.Unlock()
	}
	return res, err
}

// readOut is where a read puts what it reads: buf, grown by append or
// replaced by one from alloc.
type readOut struct {
	buf   []byte
	alloc func(n int) []byte // nil: append's growth

	committed bool  // read_committed: stop at the last stable offset
	stop      int64 // no batch at or past this offset (set by read)
}

// grow returns buf with n more bytes of length, the old ones kept.
func (o *readOut) grow(n int) []byte {
	old := len(o.buf)
	if o.alloc != nil && cap(o.buf)-old < n {
		return append(o.alloc(old+n), o.buf...)[:old+n]
	}
	return slices.Grow(o.buf, n)[:old+n]
}

func (l *Log) getScratch() *[]byte {
	if sp, ok := l.scratch.Get().(*[]byte); ok {
		return sp
	}
	b := make([]byte, scratchBytes)
	return &b
}

// readPlan is where one segment's part of a read lies, found under mu.
type readPlan struct {
	seg   *segment
	f     segmentFile // the active segment's shared file, or nil: a sealed one (Log.files)
	path  string
	start int64 // a batch position at or before the batch holding the offset
	limit int64 // bytes of the segment readers may see
}

// plan finds the segment holding offset, with the result's offsets. ok is
// false at or past the high watermark.
func (p *partition) plan(offset, stop int64) (rp readPlan, res ReadResult, ok bool, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return rp, res, false, ErrClosed
	}
	res.HighWatermark, res.LogStartOffset = p.durable.end, p.logStart.Load()
	res.LastStableOffset = p.txns.lso(res.HighWatermark, res.LogStartOffset)
	if offset < res.LogStartOffset || offset > res.HighWatermark {
		return rp, res, false, fmt.Errorf("%w: partition %s: offset %d outside [%d, %d]",
			ErrOffsetOutOfRange, p, offset, res.LogStartOffset, res.HighWatermark)
	}
	if offset == res.HighWatermark || stop >= 0 && offset >= stop {
		return rp, res, false, nil
	}
	i := sort.Search(len(p.segments), func(i int) bool { return p.segments[i].base > offset }) - 1
	s := p.segments[i]
	rp = readPlan{seg: s, f: s.use(), path: s.path, start: s.offsetFloor(offset), limit: s.size}
	if s == p.durable.seg {
		rp.limit = p.durable.size
	}
	return rp, res, true, nil
}

// read is Read on one partition; scratch is a window for header scans.
// It continues into the next segment while the budget allows.
func (p *partition) read(offset, maxBytes int64, atLeastOne bool, out readOut, scratch []byte) (ReadResult, error) {
	var res ReadResult
	out.stop = -1
	for first := true; ; first = false {
		rp, r, ok, err := p.plan(offset, out.stop)
		if first {
			res = r
			if err != nil {
				return res, err
			}
			if out.committed {
				out.stop = r.LastStableOffset
				if offset >= out.stop {
					break
				}
			}
		}
		if err != nil || !ok {
			break // the high watermark, or Close: return what we have
		}
		added, next, more, err := p.readPlanned(rp, offset, maxBytes-int64(len(out.buf)), atLeastOne && len(out.buf) == 0, &out, scratch)
		if err != nil {
			if len(out.buf) > 0 {
				break
			}
			if p.l.closed.Load() {
				return res, ErrClosed
			}
			if errors.Is(err, ErrCorruptMessage) {
				return res, err
			}
			if offset < p.logStart.Load() {
				return res, fmt.Errorf("%w: partition %s: offset %d deleted by retention while read", ErrOffsetOutOfRange, p, offset)
			}
			return res, fmt.Errorf("%w: partition %s: read %s: %w", ErrStorage, p, rp.path, err)
		}
		if added == 0 || !more {
			break
		}
		offset = next
	}
	res.Records = out.buf
	return res, nil
}

// readPlanned is readSegment on the file plan found: the active
// segment's shared one, given back after, or an older segment's, from
// the Log's cache of open files.
func (p *partition) readPlanned(rp readPlan, offset, budget int64, atLeastOne bool, out *readOut, scratch []byte) (added, next int64, more bool, err error) {
	if rp.f != nil {
		defer func() {
			p.mu.Lock()
			rp.seg.done()
			p.mu.Unlock()
		}()
	} else {
		e, err := p.l.files.acquire(rp.seg)
		if err != nil {
			return 0, offset, false, err
		}
		defer p.l.files.release(e)
		rp.f = e.f
	}
	return p.readSegment(rp, offset, budget, atLeastOne, out, scratch)
}

// readSegment appends to out the whole batches of one segment from the
// one holding offset, within budget bytes (or the first batch whole, with
// atLeastOne). It returns how many bytes it added, the offset after them,
// and whether it reached the segment's readable end (so the next segment
// may follow).
func (p *partition) readSegment(rp readPlan, offset, budget int64, atLeastOne bool, out *readOut, scratch []byte) (added, next int64, more bool, err error) {
	w := fileScanner{f: rp.f, limit: rp.limit, buf: scratch}
	pos := rp.start
	var h header
	for {
		if pos >= rp.limit {
			return 0, offset, true, nil
		}
		if h, err = w.header(pos); err != nil {
			return 0, offset, false, err
		}
		if h.lastOffset() >= offset {
			break
		}
		pos += h.size()
	}
	n := min(budget, rp.limit-pos)
	if n < h.size() {
		if !atLeastOne {
			return 0, offset, false, nil
		}
		n = h.size()
	}
	old := len(out.buf)
	buf := out.grow(int(n))
	if m, rerr := rp.f.ReadAt(buf[old:], pos); int64(m) < n {
		if rerr == nil || rerr == io.EOF {
			rerr = io.ErrUnexpectedEOF
		}
		return 0, offset, false, rerr
	}
	// Keep whole batches only, each with the CRC it claims: a batch
	// damaged on disk since it was written is never served. The batches
	// before it are; the next read starts at it and gets the error.
	k := int64(0)
	next = offset
	for k+batchHeaderBytes <= n {
		b := buf[old+int(k):]
		size := int64(int32(binary.BigEndian.Uint32(b[offLength:]))) + logOverhead
		if size < batchHeaderBytes || k+size > n {
			break
		}
		hb := parseHeader(b)
		if out.stop >= 0 && hb.baseOffset >= out.stop {
			out.buf = buf[:old+int(k)]
			return k, next, false, nil
		}
		if sum := checksum(b[:size]); sum != hb.crc {
			if k == 0 {
				out.buf = buf[:old]
				return 0, offset, false, p.corrupt(rp.path, pos, &hb, sum)
			}
			break
		}
		next = hb.nextOffset()
		k += size
	}
	out.buf = buf[:old+int(k)]
	return k, next, pos+k >= rp.limit, nil
}

// corrupt counts and reports a stored batch whose CRC does not match,
// found by a read at pos of the segment at path, and returns the read's
// error (ErrCorruptMessage: Kafka's fetch answers CORRUPT_MESSAGE for a
// CorruptRecordException from the log). The log line is rate-limited:
// every Fetch of the partition meets the same batch until an operator
// acts.
func (p *partition) corrupt(path string, pos int64, h *header, sum uint32) error {
	err := fmt.Errorf("%w: partition %s: %s at byte %d: batch at offset %d has stored crc %d, computed crc %d",
		ErrCorruptMessage, p, path, pos, h.baseOffset, h.crc, sum)
	p.l.stats.corruptReads.Add(1)
	if n, ok := p.l.corruptLog.allow(p.l.cfg.Now()); ok {
		p.l.cfg.Logger.Error("corrupt batch in the log; reads of it fail with CORRUPT_MESSAGE",
			"topic", p.tp.Topic, "partition", p.tp.Partition, "file", path, "byte", pos,
			"offset", h.baseOffset, "stored_crc", h.crc, "computed_crc", sum, "suppressed", n)
	}
	return err
}

// Readable bounds the bytes Read could return from offset: from the
// indexed batch position at or before the batch holding offset to the
// high watermark, over every segment on the way. It is 0 at the high
// watermark and for an offset out of range or a partition the log does
// not hold (Read says which). Fetch reserves its memory with it before it
// reads, instead of the whole MaxBytes a client asks for.
func (l *Log) Readable(topic string, partition int32, offset int64) int64 {
	p := l.lookup(topic, partition)
	if p == nil {
		return 0
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || offset < p.logStart.Load() || offset >= p.durable.end {
		return 0
	}
	i := sort.Search(len(p.segments), func(i int) bool { return p.segments[i].base > offset }) - 1
	n := -p.segments[i].offsetFloor(offset)
	for _, s := range p.segments[i:] {
		if s == p.durable.seg {
			return n + p.durable.size
		}
		n += s.size
	}
	return n
}

// MaxMessageBytes is the largest batch the log accepts, of any topic
// (Config.MaxMessageBytes, or a topic's larger TopicSettings): by how much a read's first batch may exceed
// its byte budget (KIP-74).
func (l *Log) MaxMessageBytes() int32 {
	return max(l.settings.maxMsg.Load(), l.cfg.MaxMessageBytes)
}
