package offsets

import (
	"sync"
	"time"
)

// Memory is the in-memory twin of Store, for tests and labs: the same
// methods, the same validation, the same order of commits and deletes,
// and nothing on disk. It is safe for concurrent use.
//
// Enqueued ops wait in a queue, in order, until someone waits for one of
// them (or Close): the first wait applies every queued op. So, as with
// Store, an op is visible to readers only once a wait or Close made it
// "durable", and never before an op enqueued ahead of it.
type Memory struct {
	mu        sync.Mutex
	committed table        // guarded by mu
	queued    []*op        // guarded by mu: enqueued, not applied yet, in order
	closed    bool         // guarded by mu
	stats     Stats        // guarded by mu
	wait      func() error // applies what is queued: every op's wait
}

// NewMemory returns an empty Memory.
func NewMemory() *Memory {
	m := &Memory{committed: table{}}
	m.wait = func() error {
		m.mu.Lock()
		defer m.mu.Unlock()
		m.flush()
		return nil
	}
	return m
}

// Enqueue is Store.Enqueue.
func (m *Memory) Enqueue(group string, entries []Entry) (wait func() error) {
	return m.enqueue(commitOp(group, entries))
}

// Delete is Store.Delete.
func (m *Memory) Delete(group string) (wait func() error) { return m.enqueue(deleteOp(group)) }

// DeleteOffsets is Store.DeleteOffsets.
func (m *Memory) DeleteOffsets(group string, keys []Key) (wait func() error) {
	return m.enqueue(deleteOffsetsOp(group, keys))
}

// Expire is Store.Expire.
func (m *Memory) Expire(group string, cutoff time.Time) (wait func() error) {
	return m.enqueue(expireOp(group, cutoff))
}

// Commit enqueues entries and waits until they are applied.
func (m *Memory) Commit(group string, entries []Entry) error { return m.Enqueue(group, entries)() }

func (m *Memory) enqueue(o *op, err error) func() error {
	if err != nil {
		return func() error { return err }
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return func() error { return ErrClosed }
	}
	if o == nil {
		return func() error { return nil }
	}
	m.queued = append(m.queued, o)
	return m.wait
}

// flush applies every queued op. Called with mu held.
func (m *Memory) flush() {
	for _, o := range m.queued {
		m.committed.apply(o)
		if o.kind == opCommit {
			m.stats.Commits++
		} else {
			m.stats.Deletes++
		}
	}
	m.queued = nil
}

// Committed is Store.Committed.
func (m *Memory) Committed(group string) []Entry {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.committed.sorted(group)
}

// Lookup is Store.Lookup.
func (m *Memory) Lookup(group, topic string, partition int32) (Entry, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.committed.lookup(group, Key{Topic: topic, Partition: partition})
}

// Groups is Store.Groups.
func (m *Memory) Groups() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.committed.groups()
}

// Stats returns the counters that apply to memory: Commits and Deletes.
func (m *Memory) Stats() Stats {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.stats
}

// Close applies every queued op and refuses new ones. It is idempotent
// and never fails.
func (m *Memory) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.flush()
	m.closed = true
	return nil
}
