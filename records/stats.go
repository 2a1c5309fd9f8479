package records

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// Stats counts what a Log did since Open. Every field is cheap to read.
type Stats struct {
	Partitions      int   // partitions held
	BatchesAppended int64 // batches written (duplicates not counted)
	RecordsAppended int64 // records in those batches
	BytesAppended   int64 // bytes of those batches
	Duplicates      int64 // idempotent retries answered with their original offsets
	FlushRounds     int64 // group commits: rounds of syncs
	Syncs           int64 // file syncs (fdatasync) made by flush rounds
	SegmentsDeleted int64 // segments deleted by retention
	CutTails        int64 // torn or corrupt tails cut off at Open
	StorageErrors   int64 // failed writes, syncs and rolls
	CorruptReads    int64 // reads that met a stored batch whose CRC does not match
}

// counters are the Log's Stats, updated atomically.
type counters struct {
	batches, records, bytes atomic.Int64
	duplicates              atomic.Int64
	flushRounds, syncs      atomic.Int64
	segmentsDeleted         atomic.Int64
	cutTails                atomic.Int64
	storageErrors           atomic.Int64
	corruptReads            atomic.Int64
}

func (c *counters) appended(h *header, size int64) {
	c.batches.Add(1)
	c.records.Add(int64(h.recordCount))
	c.bytes.Add(size)
}

// Stats returns the Log's counters.
func (l *Log) Stats() Stats {
	c := &l.stats
	return Stats{
		Partitions:      len(*l.parts.Load()),
		BatchesAppended: c.batches.Load(),
		RecordsAppended: c.records.Load(),
		BytesAppended:   c.bytes.Load(),
		Duplicates:      c.duplicates.Load(),
		FlushRounds:     c.flushRounds.Load(),
		Syncs:           c.syncs.Load(),
		SegmentsDeleted: c.segmentsDeleted.Load(),
		CutTails:        c.cutTails.Load(),
		StorageErrors:   c.storageErrors.Load(),
		CorruptReads:    c.corruptReads.Load(),
	}
}

// PartitionStats describes one partition's log, for metrics and the admin
// page.
type PartitionStats struct {
	LogStartOffset int64 // first offset held
	HighWatermark  int64 // offset after the last durable record: what readers see
	// LastStableOffset is what read_committed readers see up to (lso.go).
	LastStableOffset int64
	LogEndOffset     int64 // offset after the last record written, durable or not
	Bytes            int64 // bytes in segment files
	Segments         int   // segment files
	Producers        int   // idempotent producers remembered
	Waiters          int   // long polls (Waiters) waiting on the partition
	// Broken is why the partition refuses appends until restart, or "".
	Broken string
}

// PartitionStats returns one partition's figures.
func (l *Log) PartitionStats(topic string, partition int32) (PartitionStats, error) {
	p, err := l.partition(topic, partition)
	if err != nil {
		return PartitionStats{}, err
	}
	p.mu.Lock()
	st := PartitionStats{
		LogStartOffset: p.logStart.Load(), HighWatermark: p.hw.Load(), LogEndOffset: p.logEnd,
		Bytes: p.bytes, Segments: len(p.segments), Producers: len(p.producers.m),
		LastStableOffset: p.txns.lso(p.durable.end, p.logStart.Load()),
	}
	if p.broken != nil {
		st.Broken = fmt.Sprint(p.broken)
	}
	p.mu.Unlock()
	p.wmu.Lock() // never held with mu (doc.go)
	st.Waiters = len(p.watchers)
	p.wmu.Unlock()
	return st, nil
}

// logInterval is the least time between two lines of one kind of
// repeated event (a corrupt batch that every Fetch of a partition meets).
const logInterval = 10 * time.Second

// limitedLog lets one log line of a kind through per logInterval and
// counts the ones held back in between.
type limitedLog struct {
	mu         sync.Mutex
	last       time.Time // guarded by mu
	suppressed int       // guarded by mu
}

// allow reports whether a line may be logged at now, and how many were
// held back since the last one.
func (r *limitedLog) allow(now time.Time) (suppressed int, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.last.IsZero() && now.Sub(r.last) < logInterval {
		r.suppressed++
		return 0, false
	}
	n := r.suppressed
	r.last, r.suppressed = now, 0
	return n, true
}
