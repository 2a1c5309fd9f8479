package records

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
	"sync"
)

// memFS is a file system in memory, for a Log with Config.Dir "": the same
// code paths as on disk, with syncs that cost nothing. A removed file stays
// readable through the handles already open on it, as on Unix.
//
// Its files allocate no space ahead (Allocate is errors.ErrUnsupported),
// unless allocates is set: then Allocate extends a file with zeros, as
// fallocate does, so that tests see the zero tail of an active segment
// without a Linux file system.
type memFS struct {
	mu        sync.Mutex
	files     map[string]*memData // guarded by mu
	dirs      map[string]bool     // guarded by mu
	allocates bool                // guarded by mu: files opened from now on implement Allocate
}

func newMemFS() *memFS {
	return &memFS{files: map[string]*memData{}, dirs: map[string]bool{".": true}}
}

// memData is one file's contents.
type memData struct {
	mu   sync.RWMutex
	data []byte // guarded by mu
}

func clean(p string) string { return path.Clean(p) }

func (m *memFS) MkdirAll(dir string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for d := clean(dir); ; d = path.Dir(d) {
		if _, ok := m.files[d]; ok {
			return fmt.Errorf("mkdir %s: %w", d, fs.ErrExist)
		}
		m.dirs[d] = true
		if d == "." || d == "/" {
			return nil
		}
	}
}

func (m *memFS) ReadDir(dir string) ([]dirEntry, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	dir = clean(dir)
	if !m.dirs[dir] {
		return nil, fmt.Errorf("readdir %s: %w", dir, fs.ErrNotExist)
	}
	var out []dirEntry
	for p := range m.files {
		if path.Dir(p) == dir {
			out = append(out, dirEntry{name: path.Base(p), kind: kindFile})
		}
	}
	for p := range m.dirs {
		if p != dir && path.Dir(p) == dir {
			out = append(out, dirEntry{name: path.Base(p), kind: kindDir})
		}
	}
	slices.SortFunc(out, func(a, b dirEntry) int { return strings.Compare(a.name, b.name) })
	return out, nil
}

func (m *memFS) OpenFile(p string, create bool) (segmentFile, int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p = clean(p)
	if !m.dirs[path.Dir(p)] {
		return nil, 0, fmt.Errorf("open %s: %w", p, fs.ErrNotExist)
	}
	if m.dirs[p] {
		return nil, 0, fmt.Errorf("%s: %w (directory)", p, errNotRegular)
	}
	d, ok := m.files[p]
	switch {
	case create && ok:
		return nil, 0, fmt.Errorf("open %s: %w", p, fs.ErrExist)
	case !create && !ok:
		return nil, 0, fmt.Errorf("open %s: %w", p, fs.ErrNotExist)
	case create:
		d = &memData{}
		m.files[p] = d
	}
	d.mu.RLock()
	size := int64(len(d.data))
	d.mu.RUnlock()
	return &memFile{d: d, allocates: m.allocates}, size, nil
}

func (m *memFS) Remove(p string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	p = clean(p)
	if m.dirs[p] {
		for q := range m.files {
			if path.Dir(q) == p {
				return fmt.Errorf("remove %s: directory not empty", p)
			}
		}
		for q := range m.dirs {
			if q != p && path.Dir(q) == p {
				return fmt.Errorf("remove %s: directory not empty", p)
			}
		}
		delete(m.dirs, p)
		return nil
	}
	if _, ok := m.files[p]; !ok {
		return fmt.Errorf("remove %s: %w", p, fs.ErrNotExist)
	}
	delete(m.files, p)
	return nil
}

// Rename moves a file, or a directory with the files and directories
// under it.
func (m *memFS) Rename(oldPath, newPath string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	oldPath, newPath = clean(oldPath), clean(newPath)
	if _, ok := m.files[newPath]; ok || m.dirs[newPath] {
		return fmt.Errorf("rename %s: %w", newPath, fs.ErrExist)
	}
	if d, ok := m.files[oldPath]; ok {
		delete(m.files, oldPath)
		m.files[newPath] = d
		return nil
	}
	if !m.dirs[oldPath] {
		return fmt.Errorf("rename %s: %w", oldPath, fs.ErrNotExist)
	}
	moved := func(p string) (string, bool) {
		if p == oldPath {
			return newPath, true
		}
		if rest, ok := strings.CutPrefix(p, oldPath+"/"); ok {
			return newPath + "/" + rest, true
		}
		return "", false
	}
	for p, d := range m.files {
		if q, ok := moved(p); ok {
			delete(m.files, p)
			m.files[q] = d
		}
	}
	for p := range m.dirs {
		if q, ok := moved(p); ok {
			delete(m.dirs, p)
			m.dirs[q] = true
		}
	}
	return nil
}

func (m *memFS) SyncDir(string) error { return nil }

func (m *memFS) ReadFile(p string) ([]byte, error) {
	m.mu.Lock()
	d, ok := m.files[clean(p)]
	m.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("read %s: %w", p, fs.ErrNotExist)
	}
	d.mu.RLock()
	defer d.mu.RUnlock()
	return slices.Clone(d.data), nil
}

func (m *memFS) WriteFileAtomic(p string, data []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	p = clean(p)
	if !m.dirs[path.Dir(p)] {
		return fmt.Errorf("write %s: %w", p, fs.ErrNotExist)
	}
	m.files[p] = &memData{data: slices.Clone(data)}
	return nil
}

// memFile is one open handle on a memData.
type memFile struct {
	d         *memData
	allocates bool // Allocate extends the file (memFS.allocates)
	mu        sync.Mutex
	closed    bool // guarded by mu
}

func (f *memFile) isClosed() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.closed
}

func (f *memFile) ReadAt(p []byte, off int64) (int, error) {
	if f.isClosed() {
		return 0, os.ErrClosed
	}
	if off < 0 {
		return 0, fmt.Errorf("read at %d: %w", off, fs.ErrInvalid)
	}
	f.d.mu.RLock()
	defer f.d.mu.RUnlock()
	if off >= int64(len(f.d.data)) {
		return 0, io.EOF
	}
	n := copy(p, f.d.data[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func (f *memFile) WriteAt(p []byte, off int64) (int, error) {
	if f.isClosed() {
		return 0, os.ErrClosed
	}
	if off < 0 {
		return 0, fmt.Errorf("write at %d: %w", off, fs.ErrInvalid)
	}
	f.d.mu.Lock()
	defer f.d.mu.Unlock()
	if end := off + int64(len(p)); end > int64(len(f.d.data)) {
		f.d.data = slices.Grow(f.d.data, int(end)-len(f.d.data))[:end]
	}
	return copy(f.d.data[off:], p), nil
}

func (f *memFile) Sync() error {
	if f.isClosed() {
		return os.ErrClosed
	}
	return nil
}

func (f *memFile) Truncate(size int64) error {
	if f.isClosed() {
		return os.ErrClosed
	}
	f.d.mu.Lock()
	defer f.d.mu.Unlock()
	if size < int64(len(f.d.data)) {
		clear(f.d.data[size:])
		f.d.data = f.d.data[:size]
	} else {
		f.d.data = slices.Grow(f.d.data, int(size)-len(f.d.data))[:size]
	}
	return nil
}

// Allocate extends the file with zeros to off+n, if it is shorter and
// the memFS allocates; there are no blocks to reserve.
func (f *memFile) Allocate(off, n int64) error {
	if f.isClosed() {
		return os.ErrClosed
	}
	if !f.allocates {
		return errors.ErrUnsupported
	}
	if off < 0 || n <= 0 {
		return fmt.Errorf("allocate %d bytes at %d: %w", n, off, fs.ErrInvalid)
	}
	f.d.mu.Lock()
	defer f.d.mu.Unlock()
	if end := off + n; end > int64(len(f.d.data)) {
		f.d.data = slices.Grow(f.d.data, int(end)-len(f.d.data))[:end]
	}
	return nil
}

func (f *memFile) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return os.ErrClosed
	}
	f.closed = true
	return nil
}
