package records

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"path/filepath"
	"sync"
	"sync/atomic"
)

// producerIDFile, in the log directory, records how far producer ids have
// been handed out: {"version":1,"next":N} says no id at or above N was
// ever handed out. It is replaced atomically (temp file, fsync, rename,
// directory fsync) before any id of a new block is handed out.
const producerIDFile = "producer_ids.json"

// producerIDBlock is how many ids one write of producerIDFile reserves, as
// Kafka's controller hands brokers blocks of 1000 (ProducerIdManager). A
// restart skips what is left of the block: ids are never reused, and a
// few are never used.
const producerIDBlock = 1000

// producerIDsVersion is the file's format version.
const producerIDsVersion = 1

type producerIDsJSON struct {
	Version int   `json:"version"`
	Next    int64 `json:"next"`
}

// producerIDs allocates producer ids.
type producerIDs struct {
	fs   fileSystem
	path string // "" in memory: nothing to persist

	mu    sync.Mutex
	next  int64 // guarded by mu: the next id to hand out
	limit int64 // guarded by mu: ids below limit are reserved in the file

	// bound is the producer-id high-water mark: no id at or above it was
	// ever handed out (the reserved limit; next in memory). Produce
	// refuses a batch whose producer id is not below it.
	bound atomic.Int64
}

// openProducerIDs reads the block file in dir and starts after what it
// records. The ids the logs hold are not trusted over the file: a batch
// may carry any id a client wrote into it, and one forged id near
// MaxInt64 would otherwise exhaust the ids for good. Only without a file
// (one lost, or a log directory from before it existed) does allocation
// start after fromLogs, one past the largest id in the logs.
func openProducerIDs(fs fileSystem, dir string, fromLogs int64, logger *slog.Logger) (*producerIDs, error) {
	p := &producerIDs{fs: fs}
	if dir == "" {
		p.limit = math.MaxInt64
		return p, nil
	}
	p.path = filepath.Join(dir, producerIDFile)
	data, err := fs.ReadFile(p.path)
	if isNotExist(err) {
		p.next = max(fromLogs, 0)
		p.limit = p.next
		p.bound.Store(p.limit)
		if p.next > 0 {
			logger.Warn("no producer id file; handing out ids after the largest one the logs hold",
				"file", p.path, "next", p.next)
		}
		return p, nil
	}
	if err != nil {
		return nil, fmt.Errorf("records: %w", err)
	}
	var f producerIDsJSON
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil || dec.More() {
		return nil, fmt.Errorf("%w: %s: not a producer id file: %v", ErrCorrupt, p.path, err)
	}
	if f.Version != producerIDsVersion || f.Next < 0 {
		return nil, fmt.Errorf("%w: %s: version %d, next %d", ErrCorrupt, p.path, f.Version, f.Next)
	}
	if fromLogs > f.Next {
		logger.Warn("the logs hold batches with producer ids this broker never handed out; ignoring them for allocation",
			"file", p.path, "next", f.Next, "largest_in_logs", fromLogs-1)
	}
	p.next = f.Next
	p.limit = p.next
	p.bound.Store(p.limit)
	return p, nil
}

// issued reports whether id may have been handed out: it lies below the
// high-water mark of reserved ids.
func (p *producerIDs) issued(id int64) bool { return id < p.bound.Load() }

// allocate hands out the next id, reserving a new block first if needed.
func (p *producerIDs) allocate() (int64, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.next == math.MaxInt64 {
		return 0, fmt.Errorf("%w: producer ids exhausted", ErrStorage)
	}
	if p.next >= p.limit {
		limit := p.next + min(producerIDBlock, math.MaxInt64-p.next)
		data, _ := json.Marshal(producerIDsJSON{Version: producerIDsVersion, Next: limit})
		if err := p.fs.WriteFileAtomic(p.path, append(data, '\n')); err != nil {
			return 0, fmt.Errorf("%w: reserve producer ids: %w", ErrStorage, err)
		}
		p.limit = limit
		p.raise(limit)
	}
	id := p.next
	p.next++
	if p.path == "" {
		p.raise(p.next)
	}
	return id, nil
}

// raise moves the high-water mark up to n; it never moves down. Called
// with mu held.
func (p *producerIDs) raise(n int64) {
	if n > p.bound.Load() {
		p.bound.Store(n)
	}
}
