package records

import (
	"errors"
	"fmt"
	"sync"
	"time"
)

// maxSyncWorkers bounds how many files one flush round syncs at once.
const maxSyncWorkers = 16

// Appended is where a durable append landed.
type Appended struct {
	// BaseOffset is the offset of the batch's first record.
	BaseOffset int64
	// LastOffset is the offset of the batch's last record.
	LastOffset int64
	// LogStartOffset is the partition's log start offset when the batch
	// was appended (Produce v5+ returns it).
	LogStartOffset int64
	// Duplicate reports a retry of a batch already in the log: nothing
	// was stored, and the offsets are the original's.
	Duplicate bool
}

// flushGroup is the appends of one partition that one flush round makes
// durable together. err is written before done is closed.
type flushGroup struct {
	done chan struct{}
	err  error
}

func newFlushGroup() *flushGroup { return &flushGroup{done: make(chan struct{})} }

// finished reports whether the group's round has ended.
func (g *flushGroup) finished() bool {
	select {
	case <-g.done:
		return true
	default:
		return false
	}
}

func (g *flushGroup) finish(err error) {
	g.err = err
	close(g.done)
}

// Pending is an append that is written but maybe not durable yet.
type Pending struct {
	f   *flusher
	g   *flushGroup // nil: durable already
	res Appended
}

// Wait blocks until the append is durable and returns where it landed, or
// an error wrapping ErrStorage if it could not be made durable (then
// nothing of it is stored). The first Wait starts a flush round that takes
// every append written so far, on every partition: a Produce handler
// appends all its partitions' batches first and then waits, so that one
// request costs one round. When no round is running, Wait runs it in its
// own goroutine, which would only sleep meanwhile: handing the round to
// the flusher goroutine and back costs two wake-ups per request.
func (p *Pending) Wait() (Appended, error) {
	if p.g != nil {
		p.f.lead(p.g)
	}
	<-p.Done()
	if p.g != nil && p.g.err != nil {
		return Appended{}, p.g.err
	}
	return p.res, nil
}

// Done starts a flush round if needed, like Wait, and returns a channel
// closed once Wait would not block, for callers that also watch a
// context.
func (p *Pending) Done() <-chan struct{} {
	if p.g == nil {
		return p.f.closedc
	}
	select {
	case <-p.g.done:
	default:
		p.f.kick()
	}
	return p.g.done
}

// flusher runs flush rounds: it takes every partition with appends not
// yet durable, syncs each touched file once (several files at once), and
// wakes exactly the appends each sync covered. One round runs at a time;
// appends made while it syncs gather for the next.
//
// Crash safety: an append is acknowledged, and counted below the high
// watermark, only after the fdatasync of its segment returned, and of the
// partition directory before it when the segment is new. So a crash can
// lose or tear only bytes past the last acknowledged batch; a roll syncs
// the segment it closes (partition.roll), so those bytes all lie in the
// newest segment, where Open cuts them (recover.go).
type flusher struct {
	l       *Log
	roundMu sync.Mutex    // held by whoever runs a round: the flusher goroutine or a leading Wait
	kickc   chan struct{} // capacity 1: a round is wanted
	stopc   chan struct{}
	donec   chan struct{}
	closedc chan struct{} // always closed

	mu    sync.Mutex
	dirty []*partition // guarded by mu: partitions with a pending append
	spare []*partition // owned by the flusher goroutine

	finalErr error // the last round's failures; written before donec closes
}

func newFlusher(l *Log) *flusher {
	f := &flusher{
		l: l, kickc: make(chan struct{}, 1), stopc: make(chan struct{}),
		donec: make(chan struct{}), closedc: make(chan struct{}),
	}
	close(f.closedc)
	return f
}

// add puts p on the dirty list. Called with p.mu held, once per round.
func (f *flusher) add(p *partition) {
	f.mu.Lock()
	f.dirty = append(f.dirty, p)
	f.mu.Unlock()
}

// lead runs a round in the calling goroutine if g is not done and no
// other round is running; the round takes g's appends, since they were
// queued before the caller waits.
func (f *flusher) lead(g *flushGroup) {
	if !g.finished() && f.roundMu.TryLock() {
		f.round()
		f.roundMu.Unlock()
	}
}

// kick asks for a round without waiting for it.
func (f *flusher) kick() {
	select {
	case f.kickc <- struct{}{}:
	default:
	}
}

// run is the flusher goroutine. After stop it runs one last round, for
// everything appended before the partitions were closed.
func (f *flusher) run() {
	defer close(f.donec)
	for {
		select {
		case <-f.kickc:
			f.roundMu.Lock()
			f.round()
			f.roundMu.Unlock()
		case <-f.stopc:
			f.roundMu.Lock()
			f.finalErr = f.round()
			f.roundMu.Unlock()
			return
		}
	}
}

// stop ends the goroutine after its last round and returns that round's
// failures.
func (f *flusher) stop() error {
	close(f.stopc)
	<-f.donec
	return f.finalErr
}

// syncJob is one partition's part of a round.
type syncJob struct {
	p       *partition
	g       *flushGroup
	target  durablePoint
	files   []syncFile
	dirSync bool
	err     error
}

// syncFile is a file a job syncs, counted as a user of its segment
// (segment.use) until endSync.
type syncFile struct {
	s *segment
	f segmentFile
}

// round makes every pending append durable, and returns what failed.
// Called with roundMu held.
func (f *flusher) round() error {
	f.mu.Lock()
	parts := f.dirty
	f.dirty, f.spare = f.spare[:0], nil
	f.mu.Unlock()
	if len(parts) == 0 {
		f.spare = parts
		return nil
	}
	jobs := make([]syncJob, 0, len(parts))
	for i, p := range parts {
		if j, ok := p.beginSync(); ok {
			jobs = append(jobs, j)
		}
		parts[i] = nil
	}
	f.spare = parts[:0]
	f.l.stats.flushRounds.Add(1)
	if workers := min(len(jobs), maxSyncWorkers); workers <= 1 {
		for i := range jobs {
			f.sync(&jobs[i])
		}
	} else {
		var wg sync.WaitGroup
		next := make(chan int, len(jobs))
		for i := range jobs {
			next <- i
		}
		close(next)
		for range workers {
			wg.Go(func() {
				for i := range next {
					f.sync(&jobs[i])
				}
			})
		}
		wg.Wait()
	}
	var errs []error
	for i := range jobs {
		jobs[i].p.endSync(&jobs[i])
		errs = append(errs, jobs[i].err)
	}
	return errors.Join(errs...)
}

// sync makes one job's files durable: the partition directory first when
// a segment was created in it, so that no synced byte hangs off a name a
// crash can take back.
func (f *flusher) sync(j *syncJob) {
	if j.dirSync {
		if err := f.l.fs.SyncDir(j.p.dir); err != nil {
			j.err = fmt.Errorf("sync directory %s: %w", j.p.dir, err)
			return
		}
	}
	for _, sf := range j.files {
		start := time.Now()
		err := sf.f.Sync()
		f.l.observeSync(time.Since(start))
		if err != nil {
			j.err = fmt.Errorf("sync %s: %w", sf.s.path, err)
			return
		}
	}
}

// observeSync counts one file sync and reports its time.
func (l *Log) observeSync(d time.Duration) {
	l.stats.syncs.Add(1)
	if l.cfg.ObserveSync != nil {
		l.cfg.ObserveSync(d)
	}
}

// errBroken is the cause given to appends a partition refuses after a
// rollback failed.
var errBroken = errors.New("partition refuses appends until restart")
