package records

import "sync"

// sealedFiles is how many files of sealed (older) segments a Log keeps
// open at most while no read uses them, across all partitions: reads of
// an older segment, a consumer catching up, find its file open; an idle
// partition holds no descriptor but its active segment's.
const sealedFiles = 128

// fileCache keeps a bounded set of sealed segments' files open for
// reads, least recently used first out. An entry in use is never closed;
// one whose segment is gone (retention, Close) is closed once unused. Its
// mutex is a leaf: no other lock is taken under it, and no file is
// opened or closed under it.
type fileCache struct {
	fs  fileSystem
	max int

	mu      sync.Mutex
	entries map[*segment]*cachedFile // guarded by mu
	idle    cachedFile               // guarded by mu: sentinel of the entries with no user; idle.next is the most recent
	nIdle   int                      // guarded by mu
}

// cachedFile is one open file of the cache.
type cachedFile struct {
	s    *segment
	f    segmentFile
	refs int         // guarded by fileCache.mu
	prev *cachedFile // guarded by fileCache.mu: links in idle while refs is 0
	next *cachedFile // guarded by fileCache.mu
	gone bool        // guarded by fileCache.mu: out of entries, close when unused
}

func newFileCache(fs fileSystem, max int) *fileCache {
	c := &fileCache{fs: fs, max: max, entries: map[*segment]*cachedFile{}}
	c.idle.prev, c.idle.next = &c.idle, &c.idle
	return c
}

// unlink takes e out of idle. Called with mu held.
func (c *fileCache) unlink(e *cachedFile) {
	e.prev.next, e.next.prev = e.next, e.prev
	e.prev, e.next = nil, nil
	c.nIdle--
}

// pushIdle puts e first in idle. Called with mu held.
func (c *fileCache) pushIdle(e *cachedFile) {
	e.prev, e.next = &c.idle, c.idle.next
	c.idle.next.prev = e
	c.idle.next = e
	c.nIdle++
}

// acquire returns an open file of the sealed segment s, to be given back
// with release.
func (c *fileCache) acquire(s *segment) (*cachedFile, error) {
	c.mu.Lock()
	if e := c.entries[s]; e != nil {
		c.use(e)
		c.mu.Unlock()
		return e, nil
	}
	c.mu.Unlock()
	f, _, err := c.fs.OpenFile(s.path, false)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if e := c.entries[s]; e != nil { // opened meanwhile by another read
		c.use(e)
		c.mu.Unlock()
		_ = f.Close()
		return e, nil
	}
	e := &cachedFile{s: s, f: f, refs: 1}
	c.entries[s] = e
	evict := c.trim()
	c.mu.Unlock()
	closeAll(evict)
	return e, nil
}

// use counts one more user of e. Called with mu held.
func (c *fileCache) use(e *cachedFile) {
	if e.refs == 0 && e.next != nil {
		c.unlink(e)
	}
	e.refs++
}

// release gives back a file acquire returned.
func (c *fileCache) release(e *cachedFile) {
	c.mu.Lock()
	e.refs--
	var evict []*cachedFile
	if e.refs == 0 {
		if e.gone {
			evict = append(evict, e)
		} else {
			c.pushIdle(e)
			evict = c.trim()
		}
	}
	c.mu.Unlock()
	closeAll(evict)
}

// trim takes the least recently used idle entries out while the cache
// holds more than max, and returns them to close. Called with mu held.
func (c *fileCache) trim() []*cachedFile {
	var out []*cachedFile
	for len(c.entries) > c.max && c.nIdle > 0 {
		e := c.idle.prev
		c.unlink(e)
		delete(c.entries, e.s)
		out = append(out, e)
	}
	return out
}

// forget drops the segments' files from the cache (their segments are
// deleted or closed): closed now if unused, else by their last release.
func (c *fileCache) forget(segs []*segment) {
	c.mu.Lock()
	var evict []*cachedFile
	for _, s := range segs {
		e := c.entries[s]
		if e == nil {
			continue
		}
		delete(c.entries, s)
		e.gone = true
		if e.refs == 0 {
			if e.next != nil {
				c.unlink(e)
			}
			evict = append(evict, e)
		}
	}
	c.mu.Unlock()
	closeAll(evict)
}

// open is how many files the cache holds open.
func (c *fileCache) open() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, e := range c.entries {
		if !e.gone {
			n++
		}
	}
	return n
}

func closeAll(es []*cachedFile) {
	for _, e := range es {
		_ = e.f.Close()
	}
}
