package records

import (
	"fmt"
	"slices"
	"sort"
)

// AbortedTxn is one aborted transaction of a partition, as Fetch reports
// it to read_committed readers: its producer, the offset of its first
// record and the offset of its abort marker.
type AbortedTxn struct {
	ProducerID  int64
	FirstOffset int64
	LastOffset  int64
}

// OpenTxn is a transaction with records in a partition and no marker yet.
type OpenTxn struct {
	ProducerID    int64
	ProducerEpoch int16
	FirstOffset   int64
}

// closingTxn is a transaction whose marker is written but not durable
// yet: it still holds the last stable offset back, and a rollback reopens
// it.
type closingTxn struct {
	open   OpenTxn
	marker int64 // the marker's offset
}

// txnState is one partition's transactions (Kafka's ProducerStateManager
// ongoing transactions and its transaction index): the open ones, those
// whose marker is not durable yet, and the aborted ones, oldest marker
// first. The aborted list is kept in memory and rebuilt by the recovery
// walk at Open (Kafka keeps a .txnindex file per segment); retention drops
// the entries wholly below the log start. Guarded by the partition's mu.
type txnState struct {
	open    map[int64]OpenTxn
	closing []closingTxn
	aborted []AbortedTxn
}

// track applies one appended batch: a transactional batch opens its
// producer's transaction if none is open; a marker closes it.
func (ts *txnState) track(h *header, commit bool, durable bool) {
	if !h.transactional() {
		return
	}
	if ts.open == nil {
		ts.open = map[int64]OpenTxn{}
	}
	if !h.control() {
		if _, ok := ts.open[h.producerID]; !ok {
			ts.open[h.producerID] = OpenTxn{ProducerID: h.producerID, ProducerEpoch: h.producerEpoch, FirstOffset: h.baseOffset}
		}
		return
	}
	o, ok := ts.open[h.producerID]
	if !ok {
		return
	}
	delete(ts.open, h.producerID)
	if !durable {
		ts.closing = append(ts.closing, closingTxn{open: o, marker: h.baseOffset})
	}
	if !commit {
		ts.aborted = append(ts.aborted, AbortedTxn{ProducerID: o.ProducerID, FirstOffset: o.FirstOffset, LastOffset: h.baseOffset})
	}
}

// durable forgets the closing transactions whose marker is below end.
func (ts *txnState) durable(end int64) {
	ts.closing = slices.DeleteFunc(ts.closing, func(c closingTxn) bool { return c.marker < end })
}

// rollback undoes what appends at or past end did: transactions opened
// there are forgotten, those closed there reopen, and their abort entries
// go.
func (ts *txnState) rollback(end int64) {
	for pid, o := range ts.open {
		if o.FirstOffset >= end {
			delete(ts.open, pid)
		}
	}
	keep := ts.closing[:0]
	for _, c := range ts.closing {
		if c.marker < end {
			keep = append(keep, c)
			continue
		}
		if c.open.FirstOffset < end {
			ts.open[c.open.ProducerID] = c.open
		}
	}
	clear(ts.closing[len(keep):])
	ts.closing = keep
	i := sort.Search(len(ts.aborted), func(i int) bool { return ts.aborted[i].LastOffset >= end })
	ts.aborted = ts.aborted[:i]
}

// retain drops aborted transactions whose marker is below logStart.
func (ts *txnState) retain(logStart int64) {
	i := sort.Search(len(ts.aborted), func(i int) bool { return ts.aborted[i].LastOffset >= logStart })
	if i > 0 {
		ts.aborted = slices.Delete(ts.aborted, 0, i)
	}
}

// lso is the last stable offset: the first offset of the oldest
// transaction that is open or whose marker is not durable, else hw; never
// below logStart. A transaction whose first records DeleteRecords or
// retention removed holds the offset at the log start, as Kafka clamps
// its first unstable offset (UnifiedLog.maybeIncrementFirstUnstableOffset:
// max(firstUnstableOffset, logStartOffset)): an offset below the log
// start is one no reader can fetch.
func (ts *txnState) lso(hw, logStart int64) int64 {
	lso := hw
	for _, o := range ts.open {
		lso = min(lso, o.FirstOffset)
	}
	for _, c := range ts.closing {
		lso = min(lso, c.open.FirstOffset)
	}
	return max(lso, logStart)
}

// abortedIn returns the aborted transactions a read of [from, upTo)
// must know of: those whose marker is at or past from and whose first
// record is below upTo (Kafka's LogSegment.collectAbortedTxns).
func (ts *txnState) abortedIn(from, upTo int64) []AbortedTxn {
	i := sort.Search(len(ts.aborted), func(i int) bool { return ts.aborted[i].LastOffset >= from })
	var out []AbortedTxn
	for _, a := range ts.aborted[i:] {
		if a.FirstOffset < upTo {
			out = append(out, a)
		}
	}
	return out
}

// LastStableOffset returns a partition's last stable offset (ListOffsets
// with read_committed): the first offset of its oldest transaction not
// durably ended, else the high watermark.
func (l *Log) LastStableOffset(topic string, partition int32) (int64, error) {
	p, err := l.partition(topic, partition)
	if err != nil {
		return 0, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.txns.lso(p.durable.end, p.logStart.Load()), nil
}

// OpenTransactions returns every partition's open transactions (records
// and no marker), sorted by partition, then first offset. After a restart
// the broker aborts those its transaction log does not finish.
func (l *Log) OpenTransactions() map[TopicPartition][]OpenTxn {
	out := map[TopicPartition][]OpenTxn{}
	for _, tp := range l.Partitions() {
		p := l.lookup(tp.Topic, tp.Partition)
		p.mu.Lock()
		var open []OpenTxn
		for _, o := range p.txns.open {
			open = append(open, o)
		}
		p.mu.Unlock()
		if len(open) == 0 {
			continue
		}
		slices.SortFunc(open, func(a, b OpenTxn) int { return int(a.FirstOffset - b.FirstOffset) })
		out[tp] = open
	}
	return out
}

// markerType reads whether a stored control batch at pos commits: its
// record is read through the window. A control batch we cannot read
// stops Open, as any other damage does.
func markerType(w *fileScanner, pos int64, h *header) (bool, error) {
	n := min(h.size()-batchHeaderBytes, markerRecordBytes)
	if n <= 0 || h.codec() != CodecNone {
		return false, fmt.Errorf("%w: control batch at byte %d holds no readable record", ErrCorrupt, pos)
	}
	b, err := w.at(pos+batchHeaderBytes, int(n))
	if err != nil {
		return false, err
	}
	commit, _, err := parseMarkerRecord(b)
	if err != nil {
		return false, fmt.Errorf("%w: control batch at byte %d: %w", ErrCorrupt, pos, err)
	}
	return commit, nil
}

// checkMarker refuses a marker from an epoch older than the producer's
// last one on the partition (ProducerAppendInfo.checkProducerEpoch).
func (ps *producerState) checkMarker(h *header) error {
	if e := ps.m[h.producerID]; e != nil && h.producerEpoch < e.epoch {
		return fmt.Errorf("%w: marker of producer %d at epoch %d, the partition has seen epoch %d",
			ErrInvalidProducerEpoch, h.producerID, h.producerEpoch, e.epoch)
	}
	return nil
}

// marker applies a marker to the producer's state: a newer epoch (one the
// coordinator bumped to fence the producer) replaces the entry's epoch
// and clears its batches, so that the next batch starts the new epoch at
// sequence 0 (ProducerAppendInfo.appendEndTxnMarker). A producer with no
// state gets none.
func (ps *producerState) marker(h *header, undo bool) {
	e := ps.m[h.producerID]
	if e == nil || e.epoch == h.producerEpoch {
		return
	}
	if undo {
		ps.undo = append(ps.undo, producerUndo{offset: h.baseOffset, pid: e.pid, existed: true, saved: e.snapshot()})
	}
	e.epoch, e.head, e.n = h.producerEpoch, 0, 0
}

// markerCommit reads whether a validated control batch commits; false
// for any other batch.
func (b *Batch) markerCommit() (bool, error) {
	if !b.h.control() {
		return false, nil
	}
	commit, _, err := parseMarkerRecord(b.raw[batchHeaderBytes:])
	return commit, err
}

// recoverTxn applies one stored batch to the producer and transaction
// state during the recovery walk.
func (p *partition) recoverTxn(w *fileScanner, pos int64, h *header) error {
	commit := false
	if h.control() {
		var err error
		if commit, err = markerType(w, pos, h); err != nil {
			return err
		}
		p.producers.marker(h, false)
	} else if h.idempotent() {
		p.producers.update(h, false)
	}
	p.txns.track(h, commit, true)
	return nil
}

// Transactional reports whether the batch is a transactional producer's.
func (b *Batch) Transactional() bool { return b.h.transactional() }

// Producer returns the batch's producer id and epoch (-1, -1 when it has
// none).
func (b *Batch) Producer() (id int64, epoch int16) { return b.h.producerID, b.h.producerEpoch }

// OpenTransaction returns the transaction the partition holds open for
// producerID, if any (false too for a partition that does not exist).
func (l *Log) OpenTransaction(topic string, partition int32, producerID int64) (OpenTxn, bool) {
	p := l.lookup(topic, partition)
	if p == nil {
		return OpenTxn{}, false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	o, ok := p.txns.open[producerID]
	return o, ok
}
