package records

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"sync"
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
}

// openProducerIDs reads the block file in dir and starts after both what
// it records and fromLogs (one past the largest id in the logs, which
// also covers a file lost or written by an older version).
func openProducerIDs(fs fileSystem, dir string, fromLogs int64) (*producerIDs, error) {
	p := &producerIDs{fs: fs, next: max(fromLogs, 0)}
	if dir == "" {
		p.limit = math.MaxInt64
		return p, nil
	}
	p.path = filepath.Join(dir, producerIDFile)
	data, err := fs.ReadFile(p.path)
	if isNotExist(err) {
		p.limit = p.next
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
	p.next = max(p.next, f.Next)
	p.limit = p.next
	return p, nil
}

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
	}
	id := p.next
	p.next++
	return id, nil
}
