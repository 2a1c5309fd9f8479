package records

import (
	"fmt"
	"slices"
)

// DeleteRecords moves a partition's log start offset to offset (Kafka's
// DeleteRecords; -1 means the high watermark) and returns the log start
// after it. Records below it are never served again: reads and lookups
// below it are ErrOffsetOutOfRange. An offset past the high watermark is
// ErrOffsetOutOfRange; one at or below the log start changes nothing, as
// Kafka. The checkpoint is rewritten with the new log start before the
// answer, so it is durable (a start-up adopts a log start inside a
// segment from the checkpoint); then every whole segment below it is
// deleted (never the one holding the high watermark, nor the active one).
func (l *Log) DeleteRecords(topic string, partition int32, offset int64) (int64, error) {
	p, err := l.partition(topic, partition)
	if err != nil {
		return 0, err
	}
	p.mu.Lock()
	if err := p.usable(); err != nil {
		p.mu.Unlock()
		return 0, err
	}
	hw, start := p.durable.end, p.logStart.Load()
	if offset == -1 {
		offset = hw
	}
	if offset < 0 || offset > hw {
		p.mu.Unlock()
		return 0, fmt.Errorf("%w: partition %s: delete below %d, outside [%d, %d]", ErrOffsetOutOfRange, p, offset, start, hw)
	}
	if offset <= start {
		p.mu.Unlock()
		return start, nil
	}
	p.logStart.Store(offset)
	n := 0
	for n < len(p.segments)-1 && p.segments[n] != p.durable.seg && p.segments[n].next <= offset {
		p.bytes -= p.segments[n].size
		n++
	}
	drop := slices.Clone(p.segments[:n])
	p.segments = slices.Delete(p.segments, 0, n)
	p.l.stats.segmentsDeleted.Add(int64(n))
	l.changes.Add(1)
	p.mu.Unlock()

	if l.ckpt != nil {
		if err := l.ckpt.write(); err != nil {
			p.release(drop) // the files stay for the next start, as retention's
			return 0, fmt.Errorf("%w: partition %s: log start %d not saved: %w", ErrStorage, p, offset, err)
		}
	}
	p.release(drop)
	l.files.forget(drop)
	for _, s := range drop {
		if err := l.fs.Remove(s.path); err != nil {
			l.cfg.Logger.Warn("cannot delete segment below the log start", "file", s.path, "err", err)
		}
	}
	return offset, nil
}
