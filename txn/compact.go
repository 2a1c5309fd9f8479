package txn

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
)

// Rewriting the transaction log. The log only grows: every InitProducerId,
// transaction and expiry appends. A rewrite replaces it with what its
// records say now, one init per transactional id and the record of its
// state (Kafka's compacted __transaction_state keeps the last value per
// key the same way). It is a function of the log's own records, not of
// memory, so it needs neither the coordinator's lock nor a quiet moment:
// it folds the records up to the end it saw when it began, while writers
// go on appending past that end; then, under the journal's lock, it copies
// what they appended onto the new file, syncs it and renames it over the
// old one. Replaying the new file gives what replaying the old one gives.
//
// It runs when it pays: when the file holds garbageRatio times more than
// the records a rewrite last kept (live), and at least compactMinBytes.
// The cost of a rewrite, proportional to the live records, is then paid
// for by at least garbageRatio times as many bytes appended since, so an
// idle broker never rewrites, however many ids it holds.

const (
	// compactMinBytes is the least size at which the log is rewritten.
	compactMinBytes = 1 << 20
	// garbageRatio: the log is rewritten once what a rewrite would drop
	// is more than garbageRatio times what it would keep.
	garbageRatio = 1
	// tailCopyBytes: a rewrite copies the tail written while it folded
	// outside the journal's lock while more than this is left.
	tailCopyBytes = 64 << 10
)

// foldID is one transactional id as its records leave it: its latest
// init (with the epoch a broker's abort bumped it to) and its latest
// state record (begin, end or done; nil for none since the init).
type foldID struct {
	init  entry
	state *entry
}

// foldJournal replays records as recovery reads them (recover.go): an init
// starts an id over; a begin, end or done of the producer id the id holds
// becomes its state (an end at a newer epoch, a broker's abort, carries
// the epoch over to the id); an expire forgets the id; a record of a
// producer id the id no longer holds is dropped.
func foldJournal(es []entry) map[string]*foldID {
	ids := map[string]*foldID{}
	for i := range es {
		e := es[i]
		f := ids[e.ID]
		switch {
		case e.Kind == kindInit:
			ids[e.ID] = &foldID{init: e}
		case e.Kind == kindExpire:
			delete(ids, e.ID)
		case f == nil || f.init.PID != e.PID:
		default:
			if e.Kind == kindEnd && e.Epoch != f.init.Epoch {
				f.init.LastEpoch, f.init.Epoch = f.init.Epoch, e.Epoch
			}
			f.state = &e
		}
	}
	return ids
}

// compacted is the log that says what ids say: per id, sorted, its init
// and its state record.
func compacted(ids map[string]*foldID) []entry {
	out := make([]entry, 0, 2*len(ids))
	for _, id := range slices.Sorted(maps.Keys(ids)) {
		f := ids[id]
		out = append(out, f.init)
		if f.state != nil {
			out = append(out, *f.state)
		}
	}
	return out
}

// shouldCompact reports whether a rewrite pays now.
func (j *journal) shouldCompact() bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.f != nil && !j.closed && !j.rewriting && j.size >= j.compactMin && j.size-j.live > garbageRatio*j.live
}

// compact rewrites the log to its folded records, then the records
// appended while it ran. It returns whether it rewrote; when the fold
// finds less garbage than pays, it only updates live and keeps the file.
// One runs at a time.
func (j *journal) compact() (bool, error) {
	j.mu.Lock()
	if j.f == nil || j.closed || j.rewriting {
		j.mu.Unlock()
		return false, nil
	}
	j.rewriting = true
	f, upto, cuts := j.f, j.size, j.cuts
	j.mu.Unlock()
	defer func() {
		j.mu.Lock()
		j.rewriting = false
		j.mu.Unlock()
	}()
	old := make([]byte, upto)
	if _, err := f.ReadAt(old, 0); err != nil && !errors.Is(err, io.EOF) {
		return false, fmt.Errorf("%w: read %s: %w", ErrStorage, j.path, err)
	}
	es, n := decodeJournal(old)
	if n != upto {
		return false, fmt.Errorf("%w: %s holds %d sound bytes of %d", ErrStorage, j.path, n, upto)
	}
	var buf []byte
	for _, e := range compacted(foldJournal(es)) {
		buf = e.encode(buf)
	}
	if upto-int64(len(buf)) <= garbageRatio*int64(len(buf)) {
		j.mu.Lock()
		j.live = int64(len(buf)) + (j.size - upto)
		j.mu.Unlock()
		return false, nil
	}
	tmp := j.path + ".compact"
	nf, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return false, fmt.Errorf("%w: %w", ErrStorage, err)
	}
	swapped := false
	defer func() {
		if !swapped {
			_ = nf.Close()
			_ = os.Remove(tmp)
		}
	}()
	if _, err := nf.WriteAt(buf, 0); err != nil {
		return false, fmt.Errorf("%w: write %s: %w", ErrStorage, tmp, err)
	}
	if j.hold != nil {
		j.hold()
	}
	// The tail appended meanwhile: most of it without the lock, the rest
	// under it, where nothing more can be appended.
	at, from := int64(len(buf)), upto
	for {
		j.mu.Lock()
		end := j.size
		if end-from <= tailCopyBytes || j.closed || j.cuts != cuts {
			break // with mu held
		}
		j.mu.Unlock()
		if err := copyRange(nf, f, at, from, end); err != nil {
			return false, err
		}
		at, from = at+end-from, end
	}
	defer j.mu.Unlock()
	for j.syncing {
		j.synced.Wait()
	}
	if j.closed {
		return false, ErrClosed
	}
	if j.cuts != cuts {
		return false, fmt.Errorf("%w: a sync of %s failed during its rewrite", ErrStorage, j.path)
	}
	if err := copyRange(nf, f, at, from, j.size); err != nil {
		return false, err
	}
	size := at + j.size - from
	j.syncs++
	if err := j.sync(nf); err != nil {
		return false, fmt.Errorf("%w: sync %s: %w", ErrStorage, tmp, err)
	}
	if err := os.Rename(tmp, j.path); err != nil {
		return false, fmt.Errorf("%w: rename %s: %w", ErrStorage, tmp, err)
	}
	swapped = true
	_ = f.Close()
	j.f, j.size, j.durable, j.allocated = nf, size, size, size
	j.live, j.gen = int64(len(buf))+size-at, j.gen+1
	j.rewrites++
	j.synced.Broadcast()
	if err := syncDir(filepath.Dir(j.path)); err != nil {
		// The new file is in place and synced; only its name may not be
		// durable yet, and the next rename's directory sync covers it.
		j.logger.Warn("transaction log rewritten; its directory not synced", "file", j.path, "err", err)
	}
	return true, nil
}

// copyRange copies src's bytes [from, to) to dst at at.
func copyRange(dst, src *os.File, at, from, to int64) error {
	if to <= from {
		return nil
	}
	b := make([]byte, to-from)
	if _, err := src.ReadAt(b, from); err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("%w: read %s: %w", ErrStorage, src.Name(), err)
	}
	if _, err := dst.WriteAt(b, at); err != nil {
		return fmt.Errorf("%w: write %s: %w", ErrStorage, dst.Name(), err)
	}
	return nil
}

// syncDir makes a rename in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
