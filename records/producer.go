package records

import (
	"fmt"
	"math"
)

// producerBatches is how many batches are remembered per producer and
// partition: Kafka's ProducerStateManager.NUM_BATCHES_TO_RETAIN, which is
// also the most produce requests a client may have in flight per
// partition with idempotence.
const producerBatches = 5

// batchMeta is what a duplicate check needs of one appended batch
// (Kafka's BatchMetadata).
type batchMeta struct {
	firstSeq, lastSeq      int32
	baseOffset, lastOffset int64
}

// producerEntry is one producer's state on one partition (Kafka's
// ProducerStateEntry): its epoch and its last batches, oldest first in a
// ring. It is linked into the partition's least-recently-used list.
type producerEntry struct {
	pid        int64
	epoch      int16
	head, n    uint8
	batches    [producerBatches]batchMeta
	prev, next *producerEntry
}

func (e *producerEntry) last() *batchMeta {
	return &e.batches[(int(e.head)+int(e.n)-1)%producerBatches]
}

func (e *producerEntry) push(b batchMeta) {
	if e.n == producerBatches {
		e.batches[e.head] = b
		e.head = (e.head + 1) % producerBatches
		return
	}
	e.batches[(int(e.head)+int(e.n))%producerBatches] = b
	e.n++
}

// producerSnapshot is an entry's value, without its list links.
type producerSnapshot struct {
	epoch   int16
	head, n uint8
	batches [producerBatches]batchMeta
}

func (e *producerEntry) snapshot() producerSnapshot {
	return producerSnapshot{epoch: e.epoch, head: e.head, n: e.n, batches: e.batches}
}

func (e *producerEntry) restore(s producerSnapshot) {
	e.epoch, e.head, e.n, e.batches = s.epoch, s.head, s.n, s.batches
}

// producerUndo takes back one change an append made, should the append
// fail to become durable.
type producerUndo struct {
	offset  int64 // base offset of the append that made the change
	pid     int64
	existed bool // false: the append created the entry
	saved   producerSnapshot
}

// producerState is one partition's idempotent producers, bounded to max
// entries by evicting the least recently used. Guarded by the
// partition's mu.
type producerState struct {
	max  int
	m    map[int64]*producerEntry
	lru  producerEntry  // sentinel: lru.next is the most recent
	undo []producerUndo // changes past the durable end, oldest first
}

func newProducerState(max int) producerState {
	return producerState{max: max, m: map[int64]*producerEntry{}}
}

func (ps *producerState) init() {
	if ps.lru.next == nil {
		ps.lru.next, ps.lru.prev = &ps.lru, &ps.lru
	}
}

func (ps *producerState) unlink(e *producerEntry) {
	e.prev.next, e.next.prev = e.next, e.prev
	e.prev, e.next = nil, nil
}

func (ps *producerState) toFront(e *producerEntry) {
	ps.init()
	if e.next != nil {
		ps.unlink(e)
	}
	e.prev, e.next = &ps.lru, ps.lru.next
	ps.lru.next.prev = e
	ps.lru.next = e
}

// inSequence reports whether next follows last (ProducerAppendInfo.inSequence).
func inSequence(last, next int32) bool {
	return int64(next) == int64(last)+1 || (next == 0 && last == math.MaxInt32)
}

// check applies Kafka's rules for an idempotent batch, in Kafka's order:
// UnifiedLog.analyzeAndValidateProducerState looks for a duplicate of one
// of the last five batches first (ProducerStateEntry.findDuplicateBatch),
// then ProducerAppendInfo checks the epoch and the sequence. It returns
// the original batch for a duplicate.
//
// A producer with no state accepts any sequence (KIP-360): it may be new,
// forgotten (MaxProducers), or its batches deleted by retention. Kafka 4.5
// will refuse a non-zero first sequence on a partition that never held a
// record (KAFKA-15591); Kafka 4.0 to 4.2 accept it, and so do we.
func (ps *producerState) check(h *header) (*batchMeta, error) {
	e := ps.m[h.producerID]
	if e == nil {
		return nil, nil
	}
	last := h.lastSequence()
	if h.producerEpoch == e.epoch {
		for i := range int(e.n) {
			b := &e.batches[(int(e.head)+i)%producerBatches]
			if b.firstSeq == h.baseSequence && b.lastSeq == last {
				dup := *b
				return &dup, nil
			}
		}
	}
	if h.producerEpoch < e.epoch {
		return nil, fmt.Errorf("%w: producer %d epoch %d is smaller than the last seen epoch %d",
			ErrInvalidProducerEpoch, h.producerID, h.producerEpoch, e.epoch)
	}
	const noEpoch = -1 // RecordBatch.NO_PRODUCER_EPOCH
	if h.producerEpoch != e.epoch {
		if h.baseSequence != 0 && e.epoch != noEpoch {
			return nil, fmt.Errorf("%w: producer %d: new epoch %d must start at sequence 0, not %d",
				ErrOutOfOrderSequence, h.producerID, h.producerEpoch, h.baseSequence)
		}
		return nil, nil
	}
	if e.epoch != noEpoch && e.n > 0 && !inSequence(e.last().lastSeq, h.baseSequence) {
		return nil, fmt.Errorf("%w: producer %d: sequence %d does not follow %d",
			ErrOutOfOrderSequence, h.producerID, h.baseSequence, e.last().lastSeq)
	}
	return nil, nil
}

// update records an appended batch (ProducerStateEntry.addBatch: a new
// epoch clears the batches). With undo, it keeps what is needed to take
// the change back.
func (ps *producerState) update(h *header, undo bool) {
	e := ps.m[h.producerID]
	if e == nil {
		if len(ps.m) >= ps.max {
			ps.evict(h.baseOffset, undo)
		}
		e = &producerEntry{pid: h.producerID, epoch: h.producerEpoch}
		ps.m[e.pid] = e
		if undo {
			ps.undo = append(ps.undo, producerUndo{offset: h.baseOffset, pid: e.pid})
		}
	} else if undo {
		ps.undo = append(ps.undo, producerUndo{offset: h.baseOffset, pid: e.pid, existed: true, saved: e.snapshot()})
	}
	ps.toFront(e)
	if e.epoch != h.producerEpoch {
		e.epoch, e.head, e.n = h.producerEpoch, 0, 0
	}
	e.push(batchMeta{firstSeq: h.baseSequence, lastSeq: h.lastSequence(), baseOffset: h.baseOffset, lastOffset: h.lastOffset()})
}

// evict forgets the least recently used producer.
func (ps *producerState) evict(offset int64, undo bool) {
	ps.init()
	e := ps.lru.prev
	if e == &ps.lru {
		return
	}
	if undo {
		ps.undo = append(ps.undo, producerUndo{offset: offset, pid: e.pid, existed: true, saved: e.snapshot()})
	}
	ps.unlink(e)
	delete(ps.m, e.pid)
}

// rollback takes back every change made by appends at or past offset,
// newest first.
func (ps *producerState) rollback(offset int64) {
	i := len(ps.undo)
	for i > 0 && ps.undo[i-1].offset >= offset {
		i--
		u := ps.undo[i]
		e := ps.m[u.pid]
		if !u.existed {
			if e != nil {
				ps.unlink(e)
				delete(ps.m, u.pid)
			}
			continue
		}
		if e == nil {
			e = &producerEntry{pid: u.pid}
			ps.m[u.pid] = e
		}
		e.restore(u.saved)
		ps.toFront(e)
	}
	ps.undo = ps.undo[:i]
}

// durable drops the undo records of appends below offset, now durable.
func (ps *producerState) durable(offset int64) {
	i := 0
	for i < len(ps.undo) && ps.undo[i].offset < offset {
		i++
	}
	n := copy(ps.undo, ps.undo[i:])
	clear(ps.undo[n:])
	ps.undo = ps.undo[:n]
}
