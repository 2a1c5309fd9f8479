package offsets

import (
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/minibroker/minibroker/internal/atomicfile"
)

// Open loads <cfg.Dir>/offsets.json, or creates it empty when absent, so an
// unusable directory is reported at start and not at the first commit, and
// then replays the journal segments over it. The caller holds the data
// directory's lock (datadir.Lock): Open repairs what a crash left, which
// is safe only if no other process writes there.
//
// Open reads only regular files: offsets.json or a segment that is a
// symbolic link (never followed), a FIFO, a directory, ... stops it with
// an error naming the path. A corrupt file or segment is an error wrapping
// ErrCorrupt that names the path (for a segment, the byte offset and what
// to do), and it is left untouched.
//
// Open makes two repairs, each logged: it cuts a torn write off the end of
// the newest segment, keeping the cut bytes beside it (segment.go), and it
// removes the temp files of writes a crash interrupted.
func Open(cfg Config) (*Store, error) { return open(cfg, nil) }

// open is Open with runFold choosing where folds run; nil: in a goroutine
// of their own.
func open(cfg Config, runFold func(fold func())) (*Store, error) {
	if cfg.Dir == "" {
		return nil, errors.New("offsets: Config.Dir is required")
	}
	if cfg.FS == nil {
		cfg.FS = atomicfile.OS{}
	}
	if cfg.CompactBytes == 0 {
		cfg.CompactBytes = DefaultCompactBytes
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	scan, err := scanDir(cfg.Dir)
	if err != nil {
		return nil, fmt.Errorf("offsets: %w", err)
	}
	path := filepath.Join(cfg.Dir, FileName)
	t, size, exists, err := load(path)
	if err != nil {
		return nil, fmt.Errorf("offsets: %w", err)
	}
	if !exists && len(scan.segments) > 0 {
		return nil, fmt.Errorf("offsets: %w %s: missing, but journal %s exists", ErrCorrupt, path, scan.segments[0].path)
	}
	s := &Store{
		path: path, dir: cfg.Dir, fs: cfg.FS, committed: t,
		compactBytes: cfg.CompactBytes,
		w: &journalWriter{dir: cfg.Dir, fs: cfg.FS, observeSync: cfg.ObserveSync, nextSeq: 1,
			preallocBytes: preallocFor(cfg.CompactBytes)},
		log: cfg.Logger, events: newRateLog(cfg.Logger, LogInterval, time.Now),
		runFold: runFold, snapshotBytes: size,
	}
	if s.runFold == nil {
		s.runFold = s.folds.Go
	}
	s.idle.L = &s.mu
	if err := s.replay(scan.segments); err != nil {
		return nil, fmt.Errorf("offsets: %w", err)
	}
	s.removeTemps(scan.temps)
	if !exists {
		data := encode(t, nil)
		if err := atomicfile.Write(cfg.FS, path, data); err != nil {
			return nil, fmt.Errorf("offsets: %w: %w", ErrStorage, err)
		}
		s.snapshotBytes = int64(len(data))
	}
	s.stats.SnapshotBytes = s.snapshotBytes
	return s, nil
}

// replay applies every journal segment, oldest first, over the snapshot,
// and cuts a torn tail off the newest. Replaying a record twice is
// harmless (compact.go), which is what lets a fold remove segments only
// after the snapshot holding them is durable: between the two, both hold
// the same values.
func (s *Store) replay(segs []segment) error {
	for i := range segs {
		seg := &segs[i]
		valid, tail, err := replaySegment(seg.path, i == len(segs)-1, s.committed.apply)
		if err != nil {
			return err
		}
		seg.size = valid
		if tail != nil {
			saved, err := cutTail(s.fs, *seg, tail)
			if err != nil {
				return fmt.Errorf("%w: cut torn tail off %s: %w", ErrStorage, seg.path, err)
			}
			s.stats.CutTails++
			s.log.Warn("cut torn journal tail", "path", seg.path, "from", valid, "to", valid+int64(len(tail)),
				"bytes", len(tail), "saved", saved)
		}
		s.stats.JournalBytes += valid
		s.w.nextSeq = seg.seq + 1
	}
	s.sealed = segs
	s.stats.Segments = len(segs)
	return nil
}

// removeTemps removes the temp files of writes a crash interrupted. They
// hold nothing acknowledged: a snapshot counts only once renamed into
// place, a segment once renamed and fsynced into. A file that cannot be
// removed is only logged: it is harmless where it is.
func (s *Store) removeTemps(paths []string) {
	var removed []string
	for _, p := range paths {
		if err := s.fs.Remove(p); err != nil {
			s.log.Warn("cannot remove leftover temp file", "path", p, "err", err)
			continue
		}
		removed = append(removed, filepath.Base(p))
	}
	if len(removed) > 0 {
		s.stats.TempFilesRemoved += int64(len(removed))
		s.log.Info("removed leftover temp files", "dir", s.dir, "files", removed)
	}
}
