package records

import (
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"strings"
)

// deletingSuffix ends the name a partition directory is renamed to once
// its topic is deleted, before its files go: a partition is either whole
// under its own name or on its way out under this one. The name is not
// a partition name (those end in a number), and Open removes what it
// finds under it: the end of a delete a stop interrupted.
const deletingSuffix = ".deleting"

// DeleteTopic removes every partition of topic from the log and from the
// disk, and returns how many there were. The caller has already made the
// delete durable (the topic catalog's journal), so this only finishes
// it, and may be run again after a crash. In order:
//
//  1. the partitions leave the log (appends and reads get
//     ErrUnknownPartition) and the checkpoint is rewritten without them,
//     so that start-up never counts their absence as lost records;
//  2. each directory is renamed to <dir>.deleting, and the log
//     directory synced: no partition of the topic is left under its name;
//  3. the renamed directories are removed, files first.
//
// A kill between any two steps leaves either whole partitions (the
// topic's, which the broker deletes again at start-up because the
// catalog still lists the delete) or .deleting directories, which Open
// removes.
func (l *Log) DeleteTopic(topic string) (int, error) {
	if err := validTopic(topic); err != nil {
		return 0, err
	}
	l.createMu.Lock()
	defer l.createMu.Unlock()
	if l.closed.Load() {
		return 0, ErrClosed
	}
	l.putSettings(topic, TopicSettings{}, false) // a topic made again starts from the defaults
	cur := *l.parts.Load()
	next := maps.Clone(cur)
	var gone []*partition
	for tp, p := range cur {
		if tp.Topic == topic {
			gone = append(gone, p)
			delete(next, tp)
		}
	}
	if len(gone) == 0 {
		return 0, nil
	}
	for _, p := range gone {
		p.mu.Lock()
		p.closed = true
		p.mu.Unlock()
		_ = p.closeFiles()
		l.files.forget(p.segments)
	}
	l.parts.Store(&next)
	l.changes.Add(1)
	if l.ckpt != nil {
		if err := l.ckpt.write(); err != nil {
			return 0, fmt.Errorf("%w: delete %q: %w", ErrStorage, topic, err)
		}
	}
	for _, p := range gone {
		to := p.dir + deletingSuffix
		if err := l.removeTree(to); err != nil {
			return 0, err
		}
		if err := l.fs.Rename(p.dir, to); err != nil {
			return 0, fmt.Errorf("%w: delete %q: rename %s: %w", ErrStorage, topic, p.dir, err)
		}
	}
	if err := l.fs.SyncDir(l.cfg.Dir); err != nil {
		return 0, fmt.Errorf("%w: delete %q: sync %s: %w", ErrStorage, topic, l.cfg.Dir, err)
	}
	var errs []error
	for _, p := range gone {
		errs = append(errs, l.removeTree(p.dir+deletingSuffix))
	}
	if err := errors.Join(errs...); err != nil {
		return 0, err
	}
	if err := l.fs.SyncDir(l.cfg.Dir); err != nil {
		return 0, fmt.Errorf("%w: delete %q: sync %s: %w", ErrStorage, topic, l.cfg.Dir, err)
	}
	l.cfg.Logger.Info("partitions of a deleted topic removed", "topic", topic, "partitions", len(gone))
	return len(gone), nil
}

// removeTree removes dir's files and then dir; a dir that does not exist
// is nothing to do.
func (l *Log) removeTree(dir string) error {
	entries, err := l.fs.ReadDir(dir)
	if isNotExist(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("%w: remove %s: %w", ErrStorage, dir, err)
	}
	for _, e := range entries {
		if err := l.fs.Remove(filepath.Join(dir, e.name)); err != nil && !isNotExist(err) {
			return fmt.Errorf("%w: remove %s: %w", ErrStorage, dir, err)
		}
	}
	if err := l.fs.Remove(dir); err != nil && !isNotExist(err) {
		return fmt.Errorf("%w: remove %s: %w", ErrStorage, dir, err)
	}
	return nil
}

// isDeleting reports whether name is a partition directory renamed by
// DeleteTopic.
func isDeleting(name string) bool {
	base, ok := strings.CutSuffix(name, deletingSuffix)
	if !ok {
		return false
	}
	_, isPart := parsePartitionDir(base)
	return isPart
}
