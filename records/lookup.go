package records

import (
	"fmt"
	"io"
	"math"
)

// Offsets returns a partition's log start offset and high watermark
// (ListOffsets earliest and latest).
func (l *Log) Offsets(topic string, partition int32) (logStart, highWatermark int64, err error) {
	p, err := l.partition(topic, partition)
	if err != nil {
		return 0, 0, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.logStart.Load(), p.durable.end, nil
}

// timeCandidate is a segment a timestamp lookup scans, found under mu.
type timeCandidate struct {
	f        segmentFile // opened by open, for the lookup alone
	path     string
	start    int64 // scan from here
	limit    int64 // bytes readers may see
	maxTS    int64 // largest batch max timestamp below limit
	maxAt    int64 // base offset of the first batch with maxTS
	maxAtPos int64 // where a scan for that batch starts
	next     int   // index of the segment after it
}

// open opens the candidate's file for a lookup: its own descriptor, so
// that no lookup holds a segment's file open for the partition.
func (c *timeCandidate) open(l *Log) error {
	f, _, err := l.fs.OpenFile(c.path, false)
	c.f = f
	return err
}

// candidate returns the first segment at or after index i that holds
// durable batches; ok is false when there is none.
func (p *partition) candidate(i int, ts int64) (c timeCandidate, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for ; i < len(p.segments); i++ {
		s := p.segments[i]
		c = timeCandidate{path: s.path, limit: s.size, maxTS: s.maxTS, maxAt: s.maxTSOffset, next: i + 1}
		if s == p.durable.seg {
			c.limit, c.maxTS, c.maxAt = p.durable.size, p.durable.maxTS, p.durable.maxTSOffset
		}
		if c.limit == 0 {
			if s == p.durable.seg {
				return c, false
			}
			continue
		}
		if ts == math.MinInt64 || c.maxTS >= ts {
			c.start = s.timeFloor(ts)
			c.maxAtPos = s.offsetFloor(c.maxAt)
			return c, true
		}
		if s == p.durable.seg {
			return c, false
		}
	}
	return c, false
}

// OffsetForTime returns the offset and timestamp of the first record
// whose timestamp is at or after ts (ListOffsets by timestamp, Kafka's
// UnifiedLog.fetchOffsetByTimestamp): the first segment whose largest
// timestamp qualifies, then the first batch in it whose max timestamp
// does (the sparse index skips most of the segment), then the first
// record in that batch, decompressing it if needed. Only durable records
// count. With none it returns -1, -1.
func (l *Log) OffsetForTime(topic string, partition int32, ts int64) (offset, timestamp int64, err error) {
	p, err := l.partition(topic, partition)
	if err != nil {
		return 0, 0, err
	}
	sp := l.getScratch()
	defer l.scratch.Put(sp)
	for i := 0; ; {
		c, ok := p.candidate(i, ts)
		if !ok {
			return -1, -1, nil
		}
		if off, t, err := l.scanForTime(p, c, ts, *sp); err != nil || off >= 0 {
			return max(off, p.logStart.Load()), t, err // records below the log start are deleted
		}
		i = c.next
	}
}

// scanForTime is OffsetForTime's scan of one candidate segment, through
// a file opened for it; -1 if no record in it qualifies.
func (l *Log) scanForTime(p *partition, c timeCandidate, ts int64, scratch []byte) (offset, timestamp int64, err error) {
	if err := c.open(l); err != nil {
		return 0, 0, p.lookupErr(c.path, err)
	}
	defer c.f.Close()
	w := fileScanner{f: c.f, limit: c.limit, buf: scratch}
	for pos := c.start; pos < c.limit; {
		h, err := w.header(pos)
		if err != nil {
			return 0, 0, p.lookupErr(c.path, err)
		}
		if h.maxTimestamp >= ts {
			off, t, err := l.findRecord(c.f, pos, &h, func(t int64) bool { return t >= ts })
			if err != nil {
				return 0, 0, p.lookupErr(c.path, err)
			}
			if off >= 0 {
				return off, t, nil
			}
		}
		pos += h.size()
	}
	return -1, -1, nil
}

// MaxTimestamp returns the offset and timestamp of the record with the
// largest timestamp, the first such record if several share it
// (ListOffsets v7 MAX_TIMESTAMP, -3): the first segment holding the
// largest max timestamp, the first batch in it holding it, the first
// record in that batch with it. Only durable records count. With none it
// returns -1, -1.
func (l *Log) MaxTimestamp(topic string, partition int32) (offset, timestamp int64, err error) {
	p, err := l.partition(topic, partition)
	if err != nil {
		return 0, 0, err
	}
	var best timeCandidate
	found := false
	for i := 0; ; {
		c, ok := p.candidate(i, math.MinInt64)
		if !ok {
			break
		}
		if !found || c.maxTS > best.maxTS {
			best, found = c, true
		}
		i = c.next
	}
	if !found {
		return -1, -1, nil
	}
	sp := l.getScratch()
	defer l.scratch.Put(sp)
	if err := best.open(l); err != nil {
		return 0, 0, p.lookupErr(best.path, err)
	}
	defer best.f.Close()
	w := fileScanner{f: best.f, limit: best.limit, buf: *sp}
	for pos := best.maxAtPos; pos < best.limit; {
		h, err := w.header(pos)
		if err != nil {
			return 0, 0, p.lookupErr(best.path, err)
		}
		if h.baseOffset == best.maxAt {
			off, t, err := l.findRecord(best.f, pos, &h, func(t int64) bool { return t == best.maxTS })
			if err != nil {
				return 0, 0, p.lookupErr(best.path, err)
			}
			if off < 0 { // the header's max is no record's: trust the header
				return h.lastOffset(), h.maxTimestamp, nil
			}
			return off, t, nil
		}
		pos += h.size()
	}
	return -1, -1, nil
}

// lookupErr wraps a read failure of a lookup.
func (p *partition) lookupErr(path string, err error) error {
	if p.l.closed.Load() {
		return ErrClosed
	}
	return fmt.Errorf("%w: partition %s: read %s: %w", ErrStorage, p, path, err)
}

// findRecord reads the batch with header h at pos and returns the offset
// and timestamp of its first record whose timestamp satisfies match, or
// -1, -1.
func (l *Log) findRecord(f segmentFile, pos int64, h *header, match func(int64) bool) (int64, int64, error) {
	bp := l.getBatchBuffer(h.size())
	defer l.putBatchBuffer(bp)
	raw := *bp
	if m, err := f.ReadAt(raw, pos); m < len(raw) {
		if err == nil || err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return 0, 0, err
	}
	d := l.v.codecs.get()
	defer l.v.codecs.put(d)
	var s scanner
	if err := d.open(&s, h.codec(), raw[batchHeaderBytes:], max(l.cfg.MaxUncompressedBytes, int64(len(raw)))); err != nil {
		return 0, 0, err
	}
	for i := int32(0); i < h.recordCount; i++ {
		rec, err := s.next(i)
		if err != nil {
			return 0, 0, err
		}
		if t := h.baseTimestamp + rec.timestampDelta; match(t) {
			return h.baseOffset + int64(rec.offsetDelta), t, nil
		}
	}
	return -1, -1, nil
}

// getBatchBuffer returns a buffer of n bytes for one stored batch.
func (l *Log) getBatchBuffer(n int64) *[]byte {
	sp := l.getScratch()
	if int64(cap(*sp)) < n {
		b := make([]byte, n)
		return &b
	}
	*sp = (*sp)[:n]
	return sp
}

func (l *Log) putBatchBuffer(bp *[]byte) {
	if cap(*bp) == scratchBytes {
		*bp = (*bp)[:scratchBytes]
		l.scratch.Put(bp)
	}
}
