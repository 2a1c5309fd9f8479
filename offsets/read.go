package offsets

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
)

// readAttempts bounds Read's retries while a running broker folds the
// journal under it.
const readAttempts = 5

// Read returns every group's committed offsets as the files in dir hold
// them now, sorted by group, topic and partition: offsets.json with the
// journal replayed over it. It takes no lock and changes nothing, so it
// may run beside a broker that owns dir (`minibroker offsets`): the
// newest segment's torn last record is skipped, not cut, and a read that
// a concurrent fold or write raced with is retried. A corrupt file is an
// error, as for Open.
func Read(dir string) (map[string][]Entry, error) {
	var lastErr error
	for range readAttempts {
		t, stable, err := readOnce(dir)
		if err != nil && stable {
			return nil, err
		}
		if err != nil {
			lastErr = err
			continue
		}
		if stable {
			out := make(map[string][]Entry, len(t))
			for _, g := range t.groups() {
				out[g] = t.sorted(g)
			}
			return out, nil
		}
		lastErr = fmt.Errorf("offsets: %s changed %d times while being read; try again", dir, readAttempts)
	}
	return nil, lastErr
}

// readOnce reads dir once. stable is false when a segment it listed
// vanished before it was read (a fold removed it): the snapshot it loaded
// may then be older or newer than the segments it replayed. It is false
// with an error when the newest segment does not replay: the writer may
// have been copying a record over the zeros filled ahead of it (the
// reader saw its first bytes and not the rest), which a second read
// finds whole.
func readOnce(dir string) (t table, stable bool, err error) {
	scan, err := scanDir(dir)
	if err != nil {
		return nil, false, fmt.Errorf("offsets: %w", err)
	}
	t, _, _, err = load(filepath.Join(dir, FileName))
	if err != nil {
		return nil, false, fmt.Errorf("offsets: %w", err)
	}
	for i, seg := range scan.segments {
		_, _, err := replaySegment(seg.path, i == len(scan.segments)-1, t.apply)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, false, nil
		}
		if err != nil {
			return nil, i < len(scan.segments)-1 || !errors.Is(err, ErrCorrupt), fmt.Errorf("offsets: %w", err)
		}
	}
	after, err := scanDir(dir)
	if err != nil {
		return nil, false, fmt.Errorf("offsets: %w", err)
	}
	same := slices.EqualFunc(scan.segments, after.segments[:min(len(scan.segments), len(after.segments))],
		func(a, b segment) bool { return a.seq == b.seq })
	return t, same, nil
}
