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

// flusher runs flush rounds: a round takes every partition with appends
// not yet durable, syncs each touched file once (several files at once),
// and wakes exactly the appends each sync covered.
//
// Rounds run at once, but a partition is in at most one of them: a round
// that finds a partition still syncing in another leaves it, and that
// sync's end queues it again, with every append made meanwhile, for the
// next round. So an append waits for the sync of its own partition that
// is running, if any, and then for one more; never for the slowest file
// of somebody else's round. At most maxSyncWorkers files sync at once.
//
// Crash safety: an append is acknowledged, and counted below the high
// watermark, only after the fdatasync of its segment returned, and of the
// partition directory before it when the segment is new. So a crash can
// lose or tear only bytes past the last acknowledged batch; a roll syncs
// the segment it closes (partition.roll), so those bytes all lie in the
// newest segment, where Open cuts them (recover.go).
type flusher struct {
	l       *Log
	kickc   chan struct{} // capacity 1: a round is wanted
	stopc   chan struct{}
	donec   chan struct{}
	closedc chan struct{} // always closed
	slots   chan struct{} // a token per file being synced, across rounds

	mu      sync.Mutex
	dirty   []*partition // guarded by mu: partitions with a pending append
	running int          // guarded by mu: rounds running
	idle    *sync.Cond   // signalled when running drops to 0

	finalErr error // the last rounds' failures; written before donec closes
}

func newFlusher(l *Log) *flusher {
	f := &flusher{
		l: l, kickc: make(chan struct{}, 1), stopc: make(chan struct{}),
		donec: make(chan struct{}), closedc: make(chan struct{}),
		slots: make(chan struct{}, maxSyncWorkers),
	}
	f.idle = sync.NewCond(&f.mu)
	close(f.closedc)
	return f
}

// add puts p on the dirty list. Called with p.mu held, once per round.
func (f *flusher) add(p *partition) {
	f.mu.Lock()
	f.dirty = append(f.dirty, p)
	f.mu.Unlock()
}

// lead runs a round in the calling goroutine if g is not done; the round
// takes g's appends, since they were queued before the caller waits,
// unless their partition is syncing in another round.
func (f *flusher) lead(g *flushGroup) {
	if !g.finished() {
		f.round()
	}
}

// kick asks for a round without waiting for it.
func (f *flusher) kick() {
	select {
	case f.kickc <- struct{}{}:
	default:
	}
}

// run is the flusher goroutine. After stop it waits for the rounds
// running and then runs rounds until no partition is left dirty, for
// everything appended before the partitions were closed.
func (f *flusher) run() {
	defer close(f.donec)
	for {
		select {
		case <-f.kickc:
			f.round()
		case <-f.stopc:
			var errs []error
			for f.settle() {
				errs = append(errs, f.round())
			}
			f.finalErr = errors.Join(errs...)
			return
		}
	}
}

// settle waits until no round runs and reports whether a partition is
// still dirty.
func (f *flusher) settle() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	for f.running > 0 {
		f.idle.Wait()
	}
	return len(f.dirty) > 0
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

// round makes every pending append durable, except on partitions syncing
// in another round (their sync's end queues them again), and returns what
// failed.
func (f *flusher) round() error {
	f.mu.Lock()
	parts := f.dirty
	f.dirty = nil
	if len(parts) == 0 {
		f.mu.Unlock()
		return nil
	}
	f.running++
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		if f.running--; f.running == 0 {
			f.idle.Broadcast()
		}
		f.mu.Unlock()
	}()
	jobs := make([]syncJob, 0, len(parts))
	for _, p := range parts {
		if j, ok := p.beginSync(); ok {
			jobs = append(jobs, j)
		}
	}
	if len(jobs) == 0 {
		return nil
	}
	f.l.stats.flushRounds.Add(1)
	var wg sync.WaitGroup
	for i := range jobs {
		f.slots <- struct{}{}
		if i == len(jobs)-1 {
			f.sync(&jobs[i]) // the last in this goroutine, which would only wait
			<-f.slots
			break
		}
		wg.Go(func() {
			f.sync(&jobs[i])
			<-f.slots
		})
	}
	wg.Wait()
	var errs []error
	requeued := false
	for i := range jobs {
		requeued = jobs[i].p.endSync(&jobs[i]) || requeued
		errs = append(errs, jobs[i].err)
	}
	if requeued {
		f.kick()
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
