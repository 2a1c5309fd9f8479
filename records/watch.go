package records

import "sync/atomic"

// WatchOffset names a partition and the fetch offset a long poll waits
// past.
type WatchOffset struct {
	Topic     string
	Partition int32
	// Offset is the offset the fetcher wants next: the waiter fires once
	// the high watermark is above it.
	Offset int64
}

// Waiter is a long poll's wake-up: its channel is closed once the high
// watermark of any watched partition passes the offset given for it. It
// costs one map entry per watched partition while it waits and nothing
// after it fires or is closed.
type Waiter struct {
	c     chan struct{}
	fired atomic.Bool
	parts []*partition
}

// Watch returns a Waiter over the partitions given. One whose high
// watermark is already past its offset fires it at once, so a fetcher may
// read, find nothing, and then watch from the offset it read at without
// missing an append in between. Unknown partitions are ignored: they never
// fire. Close the Waiter when done with it. After Close of the Log, every
// Waiter fires.
func (l *Log) Watch(offsets ...WatchOffset) *Waiter {
	w := &Waiter{c: make(chan struct{})}
	if l.closed.Load() {
		w.fire()
		return w
	}
	for _, o := range offsets {
		p := l.lookup(o.Topic, o.Partition)
		if p == nil {
			continue
		}
		w.parts = append(w.parts, p)
		p.wmu.Lock()
		if p.watchers == nil {
			p.watchers = map[*Waiter]int64{}
		}
		p.watchers[w] = o.Offset
		p.wmu.Unlock()
		if p.hw.Load() > o.Offset {
			w.fire()
		}
	}
	if l.closed.Load() { // Close may have notified before we registered
		w.fire()
	}
	return w
}

// C is closed when a watched high watermark passes its offset.
func (w *Waiter) C() <-chan struct{} { return w.c }

// Close unregisters the Waiter. It is safe to call more than once.
func (w *Waiter) Close() {
	for _, p := range w.parts {
		p.wmu.Lock()
		delete(p.watchers, w)
		p.wmu.Unlock()
	}
	w.parts = nil
}

func (w *Waiter) fire() {
	if w.fired.CompareAndSwap(false, true) {
		close(w.c)
	}
}

// notify fires the waiters whose offset hw has passed; hw < 0 fires all
// (Close).
func (p *partition) notify(hw int64) {
	p.wmu.Lock()
	defer p.wmu.Unlock()
	for w, off := range p.watchers {
		if hw < 0 || hw > off {
			w.fire()
			delete(p.watchers, w)
		}
	}
}
