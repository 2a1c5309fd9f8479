package records

import "slices"

// retain applies the topic's RetentionBytes (TopicSettings) after a flush: it takes whole
// oldest segments off the log while the partition would still hold at
// least RetentionBytes without them, as Kafka's
// UnifiedLog.deleteRetentionSizeBreachedSegments does, and moves the log
// start offset to the first segment left. Only segments wholly below the
// high watermark go, so the active segment never does. It returns the
// segments to close and delete, which the caller does after releasing mu.
// Called with mu held.
func (p *partition) retain() []*segment {
	limit := p.l.Settings(p.tp.Topic).RetentionBytes
	if limit < 0 {
		return nil
	}
	n := 0
	bytes := p.bytes
	for n < len(p.segments)-1 {
		s := p.segments[n]
		if s == p.durable.seg || s.next > p.durable.end || bytes-s.size < limit {
			break
		}
		bytes -= s.size
		n++
	}
	if n == 0 {
		return nil
	}
	drop := slices.Clone(p.segments[:n])
	p.segments = slices.Delete(p.segments, 0, n)
	p.bytes = bytes
	p.logStart.Store(max(p.segments[0].base, p.logStart.Load())) // DeleteRecords may have moved it inside the segment
	p.txns.retain(p.segments[0].base)
	p.l.stats.segmentsDeleted.Add(int64(n))
	return drop
}

// remove closes and deletes segments retention took off the log. A
// reader still reading one gets an error and finds its offset below the
// log start. A file that cannot be removed comes back at the next Open,
// below the log start it had: harmless, and logged.
//
// The checkpoint is written first, with the new log start: Open takes a
// log start past the checkpoint's for deleted data. If it cannot be
// written, the files stay (closed) and the next Open finds them again.
func (p *partition) remove(drop []*segment) {
	if len(drop) == 0 {
		return
	}
	if p.l.ckpt != nil {
		if err := p.l.ckpt.write(); err != nil {
			p.l.cfg.Logger.Warn("checkpoint not written; segments past retention kept until the next start", "err", err)
			p.release(drop)
			return
		}
	}
	p.release(drop)
	p.l.files.forget(drop)
	for _, s := range drop {
		if err := p.l.fs.Remove(s.path); err != nil {
			p.l.cfg.Logger.Warn("cannot delete segment past retention", "file", s.path, "err", err)
		}
	}
}

// release closes the files of segments taken off the log (at once, or
// when the reads still using them are done).
func (p *partition) release(drop []*segment) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, s := range drop {
		s.release()
	}
}
