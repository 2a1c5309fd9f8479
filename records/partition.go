package records

import (
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// TopicPartition names one partition.
type TopicPartition struct {
	Topic     string
	Partition int32
}

// String returns "topic-partition", the partition's directory name.
func (tp TopicPartition) String() string { return fmt.Sprintf("%s-%d", tp.Topic, tp.Partition) }

// durablePoint is how far a partition's log is durable: the high
// watermark and where it lies on disk, with what rolling back to it must
// restore of that segment.
type durablePoint struct {
	end         int64    // offset after the last durable batch: the high watermark
	seg         *segment // the segment holding that batch's end
	size        int64    // bytes of seg that are durable
	maxTS       int64    // seg.maxTS at that point
	maxTSOffset int64    // seg.maxTSOffset at that point
}

// partition is one partition's log. Appends are ordered by mu; the flusher
// makes them durable; readers take mu only to find where to read, and read
// outside it.
type partition struct {
	tp  TopicPartition
	dir string
	l   *Log

	mu          sync.Mutex
	segments    []*segment    // guarded by mu: oldest first, the last is active
	logEnd      int64         // guarded by mu: the next offset to assign
	durable     durablePoint  // guarded by mu: what the last flush made durable
	bytes       int64         // guarded by mu: sum of segment sizes
	producers   producerState // guarded by mu
	txns        txnState      // guarded by mu
	open        *flushGroup   // guarded by mu: appends since the last flush took them; nil if none
	inflight    *flushGroup   // guarded by mu: appends a running flush is syncing; nil if none
	inflightEnd int64         // guarded by mu: offset after inflight's appends
	queued      bool          // guarded by mu: on the flusher's dirty list
	deferred    bool          // guarded by mu: a round found it syncing; its end queues it again
	needDirSync bool          // guarded by mu: a segment was created since the last flush took the partition
	failed      error         // guarded by mu: a write failed during a flush; roll back when it ends
	broken      error         // guarded by mu: a rollback failed; refuse appends until restart
	closed      bool          // guarded by mu

	hw       atomic.Int64 // durable.end; stored under mu, loaded without it
	logStart atomic.Int64 // segments[0].base, or past it inside that segment (DeleteRecords); stored under mu

	wmu      sync.Mutex
	watchers map[*Waiter]int64 // guarded by wmu: waiter -> offset it waits past
}

func newPartition(l *Log, tp TopicPartition) *partition {
	return &partition{
		tp: tp, dir: filepath.Join(l.cfg.Dir, tp.String()), l: l,
		producers: newProducerState(l.cfg.MaxProducers),
	}
}

func (p *partition) String() string { return p.tp.String() }

func (p *partition) active() *segment { return p.segments[len(p.segments)-1] }

// usable returns why p refuses appends, if it does. Called with mu held.
func (p *partition) usable() error {
	switch {
	case p.closed:
		return fmt.Errorf("%w: partition %s", ErrClosed, p)
	case p.broken != nil:
		return fmt.Errorf("%w: partition %s: %w: %w", ErrStorage, p, errBroken, p.broken)
	case p.failed != nil:
		return fmt.Errorf("%w: partition %s: rolling back a failed write", ErrStorage, p)
	}
	return nil
}

// append writes a validated batch at the log end (see Log.Append).
func (p *partition) append(b Batch) (*Pending, error) {
	h := &b.h
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.usable(); err != nil {
		return nil, err
	}
	commit, err := b.markerCommit()
	if err != nil {
		return nil, err
	}
	if h.control() {
		if err := p.producers.checkMarker(h); err != nil {
			return nil, fmt.Errorf("partition %s: %w", p, err)
		}
	} else if h.idempotent() {
		dup, err := p.producers.check(h)
		if err != nil {
			return nil, fmt.Errorf("partition %s: %w", p, err)
		}
		if dup != nil {
			return p.duplicate(dup), nil
		}
		if o, open := p.txns.open[h.producerID]; open && !h.transactional() {
			return nil, fmt.Errorf("partition %s: %w: producer %d holds a transaction open from offset %d",
				p, ErrInvalidTxnState, h.producerID, o.FirstOffset)
		}
	}
	base := p.logEnd
	h.baseOffset = base
	size := int64(len(b.raw))
	seg := p.active()
	segmentBytes := p.l.Settings(p.tp.Topic).SegmentBytes
	if !seg.fits(size, h.lastOffset(), segmentBytes) {
		var err error
		if seg, err = p.roll(base); err != nil {
			p.l.stats.storageErrors.Add(1)
			return nil, fmt.Errorf("%w: partition %s: roll: %w", ErrStorage, p, err)
		}
	}
	setBaseOffset(b.raw, base)
	pos := seg.size
	p.allocate(seg, pos+size, segmentBytes)
	if _, err := seg.f.WriteAt(b.raw, pos); err != nil {
		return nil, p.writeFailed(fmt.Errorf("write %s at %d: %w", seg.path, pos, err))
	}
	seg.track(pos, h)
	p.bytes += size
	p.logEnd = h.nextOffset()
	switch {
	case h.control():
		p.producers.marker(h, true)
	case h.idempotent():
		p.producers.update(h, true)
	}
	p.txns.track(h, commit, false)
	if p.open == nil {
		p.open = newFlushGroup()
	}
	if !p.queued {
		p.queued = true
		p.l.flush.add(p)
	}
	p.l.stats.appended(h, size)
	return &Pending{f: p.l.flush, g: p.open, res: Appended{
		BaseOffset: base, LastOffset: h.lastOffset(), LogStartOffset: p.logStart.Load(),
	}}, nil
}

// duplicate answers a retry of a batch in the log with the original's
// offsets, once the original is durable. Called with mu held.
func (p *partition) duplicate(orig *batchMeta) *Pending {
	pd := &Pending{f: p.l.flush, res: Appended{
		BaseOffset: orig.baseOffset, LastOffset: orig.lastOffset,
		LogStartOffset: p.logStart.Load(), Duplicate: true,
	}}
	switch {
	case orig.lastOffset < p.durable.end:
	case p.inflight != nil && orig.lastOffset < p.inflightEnd:
		pd.g = p.inflight
	default:
		pd.g = p.open // holds the original: its append made the group
	}
	p.l.stats.duplicates.Add(1)
	return pd
}

// roll starts a new active segment at base. It first syncs the segment it
// closes, so that only the newest segment ever holds bytes that are not
// durable: recovery cuts a torn tail there and treats damage anywhere else
// as corruption. That costs one sync per SegmentBytes, made under mu.
// Before the sync it truncates the space allocated past the segment's
// data (prealloc.go), so the sync seals a file of batches alone, and the
// new segment is created only after: a sealed segment never ends in
// zeros. Called with mu held.
func (p *partition) roll(base int64) (*segment, error) {
	old := p.active()
	if err := old.trim(); err != nil {
		return nil, err
	}
	start := time.Now()
	err := old.f.Sync()
	p.l.observeSync(time.Since(start))
	if err != nil {
		return nil, fmt.Errorf("sync %s: %w", old.path, err)
	}
	s := newSegment(p.dir, base, nil)
	f, _, err := p.l.fs.OpenFile(s.path, true)
	if err != nil {
		return nil, err
	}
	s.f = f
	old.seal()
	old.release()
	p.segments = append(p.segments, s)
	p.needDirSync = true
	return s, nil
}

// writeFailed handles a failed write: the append fails, and so does every
// append not durable yet, once the partition is rolled back. While a flush
// is syncing, the flusher rolls back when the sync ends. Called with mu
// held.
func (p *partition) writeFailed(cause error) error {
	err := fmt.Errorf("%w: partition %s: %w", ErrStorage, p, cause)
	p.l.stats.storageErrors.Add(1)
	if p.inflight != nil {
		p.failed = err
		return err
	}
	p.rollback(err)
	return err
}

// rollback cuts the files back to the durable point and makes memory say
// the same: segments created since are removed, the durable segment is
// truncated and synced, the log end and producer state return to the
// durable end, and the open group fails with cause. If the files cannot
// be cut back, the partition refuses appends until restart (Open then
// finds the stray bytes: whole batches it keeps, a torn tail it cuts).
// Called with mu held.
func (p *partition) rollback(cause error) {
	d := p.durable
	var errs []error
	i := slices.Index(p.segments, d.seg)
	for _, s := range p.segments[i+1:] {
		p.bytes -= s.size
		s.closeFile()
		if err := p.l.fs.Remove(s.path); err != nil {
			errs = append(errs, err)
		}
	}
	clear(p.segments[i+1:])
	p.segments = p.segments[:i+1]
	p.bytes -= d.seg.size - d.size
	d.seg.closeUnused = false // active again
	if d.seg.f == nil {
		f, _, err := p.l.fs.OpenFile(d.seg.path, false)
		if err != nil {
			errs = append(errs, fmt.Errorf("reopen %s: %w", d.seg.path, err))
		}
		d.seg.f = f
	}
	if d.seg.f == nil {
		// The open failed: nothing to truncate with (errs says why).
	} else if err := d.seg.f.Truncate(d.size); err != nil {
		errs = append(errs, fmt.Errorf("truncate %s to %d: %w", d.seg.path, d.size, err))
	} else {
		// The space allocated ahead went with the cut: the next append
		// allocates again from the durable end.
		d.seg.fileEnd = d.size
		if err := d.seg.f.Sync(); err != nil {
			// Best effort: the next flush's sync covers the new size
			// too. Until then a crash may bring the failed bytes back,
			// as a batch nobody was told is durable (or a torn tail
			// Open cuts).
			p.l.cfg.Logger.Warn("cut-back not durable yet", "file", d.seg.path, "err", err)
		}
	}
	d.seg.truncate(d.size, d.end)
	d.seg.maxTS, d.seg.maxTSOffset = d.maxTS, d.maxTSOffset
	p.logEnd = d.end
	p.producers.rollback(d.end)
	p.txns.rollback(d.end)
	p.needDirSync = true
	if p.open != nil {
		p.open.finish(cause)
		p.open = nil
	}
	if len(errs) > 0 {
		p.broken = fmt.Errorf("roll back to offset %d: %v", d.end, errs)
		p.l.cfg.Logger.Error("partition refuses appends until restart", "topic", p.tp.Topic,
			"partition", p.tp.Partition, "err", p.broken, "cause", cause)
	}
}

// beginSync takes the appends a flush round will make durable; none while
// another round syncs the partition (it is marked deferred, and that
// round's endSync queues it again). Called by the flusher.
func (p *partition) beginSync() (syncJob, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.queued = false
	if p.open == nil {
		return syncJob{}, false
	}
	if p.inflight != nil {
		p.deferred = true
		return syncJob{}, false
	}
	a := p.active()
	j := syncJob{
		p: p, g: p.open, dirSync: p.needDirSync,
		target: durablePoint{end: p.logEnd, seg: a, size: a.size, maxTS: a.maxTS, maxTSOffset: a.maxTSOffset},
	}
	// A segment rolled since the last round was synced by the roll; if
	// its file is closed already there is nothing left to sync in it.
	for _, s := range p.segments[slices.Index(p.segments, p.durable.seg):] {
		if f := s.use(); f != nil {
			j.files = append(j.files, syncFile{s: s, f: f})
		}
	}
	p.inflight, p.inflightEnd = p.open, p.logEnd
	p.open, p.needDirSync = nil, false
	return j, true
}

// endSync applies a job's outcome: on success the high watermark moves to
// the job's end and its appends succeed; on failure they fail and the
// partition rolls back. A write that failed meanwhile rolls back too.
// It reports whether it queued the partition again, for appends a round
// left while this sync ran. Called by the flusher.
func (p *partition) endSync(j *syncJob) (requeued bool) {
	p.mu.Lock()
	for _, sf := range j.files {
		sf.s.done()
	}
	p.inflight = nil
	var drop []*segment
	var gerr error
	if j.err == nil {
		p.durable = j.target
		p.hw.Store(j.target.end)
		p.l.changes.Add(1)
		p.producers.durable(j.target.end)
		p.txns.durable(j.target.end)
		if p.failed != nil {
			cause := p.failed
			p.failed = nil
			p.rollback(cause)
		}
		drop = p.retain()
	} else {
		gerr = fmt.Errorf("%w: partition %s: %w", ErrStorage, p, j.err)
		p.l.stats.storageErrors.Add(1)
		p.l.cfg.Logger.Error("flush failed; rolled back to the durable end", "topic", p.tp.Topic,
			"partition", p.tp.Partition, "offset", p.durable.end, "err", j.err)
		p.failed = nil
		p.needDirSync = p.needDirSync || j.dirSync
		p.rollback(gerr)
	}
	if p.deferred {
		p.deferred = false
		if p.open != nil && !p.queued {
			p.queued, requeued = true, true
			p.l.flush.add(p)
		}
	}
	hw := p.hw.Load()
	p.mu.Unlock()
	// Files retention took off go before the appends are acknowledged,
	// so that an acknowledged producer sees the log as it is.
	p.remove(drop)
	j.g.finish(gerr)
	p.notify(hw)
	return requeued
}
