package offsets

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"slices"

	"github.com/minibroker/minibroker/internal/atomicfile"
)

// Compaction folds sealed journal segments into offsets.json, as Kafka's
// log cleaner compacts __consumer_offsets, in three steps:
//
//  1. seal: the writer stops appending to the active segment (commits go
//     on into a new one at once);
//  2. write: a goroutine builds offsets.json + the sealed segments from
//     the files alone and replaces offsets.json atomically (temp file,
//     fsync, rename, directory fsync);
//  3. remove: only once that snapshot is durable, the sealed segments are
//     removed, oldest first, and the directory is fsynced.
//
// A crash after any step leaves a directory that replays to every
// acknowledged commit: before 3, the segments and the snapshot hold the
// same values for what the segments touch, and replaying them again over
// the snapshot changes nothing; during 3, the segments left are newer than
// the ones removed, so they still replay in order after the snapshot.
// The snapshot holds nothing newer than the sealed segments (it is built
// from files, not from memory), so the active segment replays after it
// correctly. Commits never wait for a fold: the fold reads only files the
// writer no longer appends to.
//
// Replaying a segment again over a snapshot that already holds it changes
// nothing, deletes included: a commit sets each of its entries, and a
// delete removes each entry it names (or each entry of the group) if that
// entry's own value qualifies (Expire: its commit time). So each entry's
// final value is decided by the last op in the replayed segments that
// touches it, as it was the first time, and an entry no op touches keeps
// the snapshot's value.

// maybeCompact seals the active segment and starts a fold when the journal
// has outgrown the threshold: CompactBytes, or the last snapshot's size if
// that is larger, so a fold costs O(1) per journaled byte. Called by the
// writer after a successful append.
func (s *Store) maybeCompact() {
	if s.compactBytes < 0 {
		return
	}
	s.mu.Lock()
	threshold := max(s.compactBytes, s.snapshotBytes, s.retryAt)
	due := !s.compacting && s.stats.JournalBytes >= threshold
	if due {
		s.compacting = true
	}
	s.mu.Unlock()
	if !due {
		return
	}
	s.seal()
	s.runFold(s.compact)
}

// compact folds every sealed segment into offsets.json.
func (s *Store) compact() {
	s.mu.Lock()
	segs := slices.Clone(s.sealed)
	s.mu.Unlock()
	t, _, _, err := load(s.path)
	if err == nil {
		for _, seg := range segs {
			if _, _, err = replaySegment(seg.path, false, t.apply); err != nil {
				break
			}
		}
	}
	var size int64
	removed := 0
	if err == nil {
		size, removed, err = s.fold(encode(t, nil), segs)
	}
	s.mu.Lock()
	s.compacting = false
	s.forget(segs[:removed])
	if err != nil {
		// Try again after another threshold's worth of journal, not on
		// every commit.
		s.retryAt = s.stats.JournalBytes + max(s.compactBytes, s.snapshotBytes)
	} else {
		s.stats.Compactions++
		s.retryAt = 0
		s.snapshotBytes, s.stats.SnapshotBytes = size, size
	}
	s.mu.Unlock()
	if err != nil {
		s.foldFailed(err)
	}
}

// foldFailed counts and logs a failed fold, with what the journal holds
// now: a fold that keeps failing lets it grow.
func (s *Store) foldFailed(err error) {
	s.mu.Lock()
	s.stats.FailedFolds++
	s.stats.LastFoldError = err
	bytes, segs := s.stats.JournalBytes, s.stats.Segments
	s.mu.Unlock()
	s.events.logAs("fold", slog.LevelError, "offsets journal fold failed",
		"err", err, "journal_bytes", bytes, "segments", segs)
}

// forget drops removed segments from the sealed list. Called with mu held.
func (s *Store) forget(removed []segment) {
	for _, seg := range removed {
		s.sealed = slices.DeleteFunc(s.sealed, func(x segment) bool { return x.seq == seg.seq })
		s.stats.JournalBytes -= seg.size
		s.stats.Segments--
	}
}

// fold replaces offsets.json with data, which must hold everything segs
// hold, then removes segs oldest first. It returns the snapshot's size and
// how many segments it removed. A snapshot write whose directory fsync
// failed is not known to be durable, so nothing is removed after it.
func (s *Store) fold(data []byte, segs []segment) (size int64, removed int, err error) {
	if err := atomicfile.Write(s.fs, s.path, data); err != nil {
		return 0, 0, fmt.Errorf("%w: %w", ErrStorage, err)
	}
	for _, seg := range segs {
		if err := s.fs.Remove(seg.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return int64(len(data)), removed, fmt.Errorf("%w: remove %s: %w", ErrStorage, seg.path, err)
		}
		removed++
	}
	if removed > 0 {
		if err := s.fs.SyncDir(s.dir); err != nil {
			// The snapshot holds every removed segment; a removal that
			// does not survive a crash is replayed harmlessly.
			return int64(len(data)), removed, fmt.Errorf("%w: %s: %w", ErrStorage, s.dir, err)
		}
	}
	return int64(len(data)), removed, nil
}

// foldOnClose folds the whole journal into offsets.json, from memory, which
// holds exactly what the files hold once no writer runs. It folds whatever
// segments there are, those an earlier run left included: a broker that
// restarts after a crash and stops again with no new commit still leaves
// offsets.json alone. With no segment there is nothing to fold, and
// offsets.json is left as it is. Called by Close after the writer and any
// fold stopped.
func (s *Store) foldOnClose() error {
	s.seal()
	s.mu.Lock()
	segs := slices.Clone(s.sealed)
	var data []byte
	if len(segs) > 0 {
		data = encode(s.committed, nil)
	}
	s.mu.Unlock()
	if len(segs) == 0 {
		return nil
	}
	size, removed, err := s.fold(data, segs)
	s.mu.Lock()
	s.forget(segs[:removed])
	if err == nil {
		s.snapshotBytes, s.stats.SnapshotBytes = size, size
	}
	s.mu.Unlock()
	if err != nil {
		s.foldFailed(err)
	}
	return err
}
