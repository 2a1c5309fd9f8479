package records

import (
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"strconv"
)

// orphanSuffix ends the name a partition directory is set aside under,
// after its own name and a number: orders-0.1-orphaned, as Kafka renames
// a deleted partition to <name>.<uuid>-delete. It is not a partition name,
// so Open passes over it (with a Warn) and the records stay on disk for
// an operator.
const orphanSuffix = "-orphaned"

// ErrNotEmpty is RemovePartition of a partition that holds or held
// records: only a partition no record was ever acknowledged on may be
// deleted.
var ErrNotEmpty = errors.New("partition holds records")

// RemovePartition deletes a partition that never held a record: its
// files, its directory and its place in the log. The broker removes
// partitions no topic owns that a failed create left behind. A partition
// that holds or held records is refused with ErrNotEmpty.
func (l *Log) RemovePartition(tp TopicPartition) error {
	l.createMu.Lock()
	defer l.createMu.Unlock()
	if l.closed.Load() {
		return ErrClosed
	}
	cur := *l.parts.Load()
	p := cur[tp]
	if p == nil {
		return fmt.Errorf("%w: %s", ErrUnknownPartition, tp)
	}
	if !p.neverWritten() {
		return fmt.Errorf("%w: %s", ErrNotEmpty, tp)
	}
	err := l.destroy(p)
	next := maps.Clone(cur)
	delete(next, tp)
	l.parts.Store(&next)
	l.changes.Add(1)
	return err
}

// SetAside takes a partition out of the log and renames its directory to
// <dir>.<n>-orphaned (the first n free), keeping every file; it returns
// the new name. The broker does this, when told to start despite lost
// data, with records no topic owns.
func (l *Log) SetAside(tp TopicPartition) (string, error) {
	l.createMu.Lock()
	defer l.createMu.Unlock()
	if l.closed.Load() {
		return "", ErrClosed
	}
	cur := *l.parts.Load()
	p := cur[tp]
	if p == nil {
		return "", fmt.Errorf("%w: %s", ErrUnknownPartition, tp)
	}
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	_ = p.closeFiles()
	l.files.forget(p.segments)
	next := maps.Clone(cur)
	delete(next, tp)
	l.parts.Store(&next)
	l.changes.Add(1)
	for n := 1; n <= 1000; n++ {
		to := p.dir + "." + strconv.Itoa(n) + orphanSuffix
		if _, err := l.fs.ReadDir(to); err == nil {
			continue
		}
		if err := l.fs.Rename(p.dir, to); err != nil {
			return "", fmt.Errorf("%w: set aside %s: %w", ErrStorage, p.dir, err)
		}
		if err := l.fs.SyncDir(l.cfg.Dir); err != nil {
			return "", fmt.Errorf("%w: sync %s: %w", ErrStorage, l.cfg.Dir, err)
		}
		return to, nil
	}
	return "", fmt.Errorf("%w: set aside %s: too many earlier ones", ErrStorage, p.dir)
}

// neverWritten reports whether no record was ever appended to p.
func (p *partition) neverWritten() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.logEnd == 0 && p.segments[0].base == 0
}

// destroy closes a partition that holds no record and deletes its
// segments and directory. The partition must not be in use.
func (l *Log) destroy(p *partition) error {
	p.mu.Lock()
	p.closed = true
	segs := p.segments
	p.mu.Unlock()
	l.files.forget(segs)
	var errs []error
	for _, s := range segs {
		if s.f != nil {
			_ = s.f.Close()
		}
		if err := l.fs.Remove(s.path); err != nil && !isNotExist(err) {
			errs = append(errs, err)
		}
	}
	if err := l.fs.Remove(p.dir); err != nil && !isNotExist(err) {
		errs = append(errs, err)
	}
	if err := l.fs.SyncDir(l.cfg.Dir); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%w: remove partition %s: %w", ErrStorage, p.tp, err)
	}
	return nil
}

// undoCreate deletes the partitions a failed CreatePartitions made, so
// that a failure leaves nothing on disk, and says what it removed.
func (l *Log) undoCreate(topic string, created []*partition, cause error) {
	var errs []error
	for _, p := range created {
		if err := l.destroy(p); err != nil {
			errs = append(errs, err)
		}
	}
	l.cfg.Logger.Warn("partitions of a failed create removed", "topic", topic, "partitions", len(created),
		"dir", filepath.Clean(l.cfg.Dir), "cause", cause, "not_removed", errors.Join(errs...))
}
