package txn

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/minibroker/minibroker/offsets"
	"github.com/minibroker/minibroker/records"
)

// EndTxn commits or aborts the producer's transaction (Kafka's
// handleEndTransaction): the decision is made durable in the transaction
// log, then a marker is written to every partition of the transaction and
// the staged offsets are applied (commit) or discarded (abort); it
// returns once all of that is durable. A retry of a decision already
// completed is nil; the other decision then is ErrInvalidTxnState, and so
// is EndTxn with no transaction begun. While another request completes
// the transaction: ErrConcurrentTransactions. A completion that failed
// (storage) leaves the transaction in its Prepare state; the next EndTxn
// with the same decision, or the expiry step, completes it.
func (c *Coordinator) EndTxn(id string, pid int64, epoch int16, commit bool) error {
	c.mu.Lock()
	t, err := c.lookupLocked(id, pid, epoch)
	if err != nil {
		c.mu.Unlock()
		return err
	}
	want := map[bool]State{true: CompleteCommit, false: CompleteAbort}[commit]
	switch t.state {
	case Ongoing:
	case PrepareCommit, PrepareAbort:
		if t.busy || (t.state == PrepareCommit) != commit {
			c.mu.Unlock()
			return fmt.Errorf("%w: %q is %s", ErrConcurrentTransactions, id, t.state)
		}
		d := t.decision
		t.busy = true
		c.mu.Unlock()
		return c.complete(t, d)
	case want:
		c.mu.Unlock()
		return nil
	default:
		c.mu.Unlock()
		return fmt.Errorf("%w: %q is %s, no transaction to %s", ErrInvalidTxnState, id, t.state, map[bool]string{true: "commit", false: "abort"}[commit])
	}
	d := c.prepareLocked(t, commit, t.epoch)
	c.mu.Unlock()
	return c.finish(t, d, false)
}

// prepareLocked moves an Ongoing transaction to its Prepare state and
// returns the decision to log: the partitions to mark, and for a commit
// the offsets staged. Called with mu held.
func (c *Coordinator) prepareLocked(t *txn, commit bool, epoch int16) *entry {
	now := c.cfg.Clock.Now()
	d := &entry{Kind: kindEnd, ID: t.id, PID: t.pid, Epoch: epoch, Commit: commit, At: now.UnixMilli()}
	d.Partitions = slices.SortedFunc(maps.Keys(t.parts), func(a, b records.TopicPartition) int {
		if c := strings.Compare(a.Topic, b.Topic); c != 0 {
			return c
		}
		return int(a.Partition - b.Partition)
	})
	d.First = make([]int64, len(d.Partitions))
	for i, tp := range d.Partitions {
		d.First[i] = -1
		if o, ok := c.cfg.Partitions.OpenTransaction(tp.Topic, tp.Partition, t.pid); ok {
			d.First[i] = o.FirstOffset
		}
	}
	d.Offsets = map[string][]offsets.Entry{}
	for _, g := range slices.Sorted(maps.Keys(t.groups)) {
		var staged []offsets.Entry
		if commit {
			staged = c.cfg.Offsets.TxnStaged(g, t.pid)
		}
		d.Offsets[g] = staged
	}
	t.state = PrepareAbort
	if commit {
		t.state = PrepareCommit
	}
	t.decision, t.busy, t.applied, t.updated = d, true, false, now
	return d
}

// abortLocked starts an abort of t that the broker decided (a new
// producer, a timeout, a restart): the epoch is bumped, which fences the
// producer that held the transaction. Called with mu held.
func (c *Coordinator) abortLocked(t *txn) *entry {
	if t.epoch < 1<<15-1 {
		t.lastEpoch, t.epoch = t.epoch, t.epoch+1
	}
	return c.prepareLocked(t, false, t.epoch)
}

// finish logs a decision, then completes it. If the log refuses it, the
// transaction goes back to Ongoing (an abort the broker started keeps
// its bumped epoch in memory; the log holds the old one, which a restart
// bumps again).
//
// The decision waits for its fdatasync only where a crash could
// otherwise leave the transaction half visible or unfence a producer:
// see mustSync. Otherwise it is written and left to the next sync: the
// markers alone then decide, and a restart that finds no decision aborts
// what the logs still hold open.
func (c *Coordinator) finish(t *txn, d *entry, bumped bool) error {
	put := c.journal.write
	if mustSync(d, bumped) {
		put = c.journal.append
	}
	if err := put(*d); err != nil {
		c.mu.Lock()
		t.busy, t.state, t.decision = false, Ongoing, nil
		c.mu.Unlock()
		return err
	}
	return c.complete(t, d)
}

// mustSync reports whether a decision must be durable before its first
// marker: a commit with offsets or with more than one partition (a crash
// between two of its markers must roll it forward, not back), and an
// abort the broker started (its bumped epoch fences the producer). A
// client's abort and a commit of one partition without offsets need not
// be: a restart that finds no decision aborts, which is the abort's own
// outcome, and a single commit marker either is durable or is not.
func mustSync(d *entry, bumped bool) bool {
	if bumped {
		return true
	}
	if !d.Commit {
		return false
	}
	return len(d.Partitions) > 1 || hasOffsets(d)
}

// hasOffsets reports whether a decision carries offsets to apply.
func hasOffsets(d *entry) bool {
	for _, staged := range d.Offsets {
		if len(staged) > 0 {
			return true
		}
	}
	return false
}

// complete writes a durable decision's markers and applies its offsets,
// both at once, then logs it done. Called with t.busy set, without mu.
// The done record waits for its sync only for a commit with offsets: a
// restart that finds the decision without it applies them again, which
// must not undo a later commit; markers written again at a restart touch
// only the partitions that still hold the transaction open.
func (c *Coordinator) complete(t *txn, d *entry) error {
	markers := make(chan error, 1)
	go func() { markers <- c.writeMarkers(d) }()
	var err error
	c.mu.Lock()
	skip := t.applied
	c.mu.Unlock()
	if !skip {
		for _, g := range slices.Sorted(maps.Keys(d.Offsets)) {
			if err = c.cfg.Offsets.EndTxnOffsets(g, d.PID, d.Offsets[g], d.Commit); err != nil {
				err = fmt.Errorf("%w: offsets of group %q: %w", ErrStorage, g, err)
				break
			}
		}
		if err == nil {
			c.mu.Lock()
			t.applied = true
			c.mu.Unlock()
		}
	}
	err = errors.Join(err, <-markers)
	if err == nil {
		done := entry{Kind: kindDone, ID: d.ID, PID: d.PID, Epoch: d.Epoch, Commit: d.Commit, At: c.cfg.Clock.Now().UnixMilli()}
		if d.Commit && hasOffsets(d) {
			err = c.journal.append(done)
		} else {
			err = c.journal.write(done)
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	t.busy = false
	if err != nil {
		c.failedLocked(t, err)
		return err
	}
	if t.failures > 0 {
		c.cfg.Logger.Info("transaction completed after failed attempts", "transactional_id", t.id, "commit", d.Commit, "attempts", t.failures+1)
	}
	t.state, t.updated = CompleteAbort, c.cfg.Clock.Now()
	if d.Commit {
		t.state = CompleteCommit
		c.stats.Committed++
	} else {
		c.stats.Aborted++
	}
	t.reset()
	return nil
}

// writeMarkers writes d's marker to every partition of the transaction
// and waits until all are durable. At a restart (recovering), a partition gets
// its marker only if it still holds open the transaction d decided (the
// same first offset): not one whose marker is already there, nor a later
// transaction of the same producer that began after an answered EndTxn
// whose done record the crash lost.
func (c *Coordinator) writeMarkers(d *entry) error {
	m := records.Marker{ProducerID: d.PID, ProducerEpoch: d.Epoch, Commit: d.Commit,
		Timestamp: c.cfg.Clock.Now().UnixMilli()}
	var pending []*records.Pending
	var errs []error
	for i, tp := range d.Partitions {
		if c.recovering && len(d.First) == len(d.Partitions) {
			o, ok := c.cfg.Partitions.OpenTransaction(tp.Topic, tp.Partition, d.PID)
			if !ok || d.First[i] < 0 || o.FirstOffset != d.First[i] {
				continue
			}
		}
		p, err := c.cfg.Partitions.AppendMarker(tp.Topic, tp.Partition, m)
		if errors.Is(err, records.ErrUnknownPartition) {
			c.markerSkipped(d, tp)
			continue
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		pending = append(pending, p)
	}
	for _, p := range pending {
		if _, err := p.Wait(); err != nil && !errors.Is(err, records.ErrUnknownPartition) {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%w: markers: %w", ErrStorage, err)
	}
	return nil
}

// markerSkipped logs a marker not written because its partition no
// longer exists (DeleteTopics, or a topic deleted while the transaction
// was open): there is nothing left for it to decide, so the transaction
// completes without it, as Kafka's TransactionMarkerChannelManager skips
// partitions whose leader it cannot find ("likely deleted already").
func (c *Coordinator) markerSkipped(d *entry, tp records.TopicPartition) {
	c.cfg.Logger.Info("transaction marker skipped: the partition no longer exists",
		"transactional_id", d.ID, "producer_id", d.PID, "topic", tp.Topic, "partition", tp.Partition)
}

// idleScanEvery is how often (on the clock) the expiry step looks for
// idle transactional ids: an id expires at most this late. Kafka looks
// every hour (transactions.remove.expired.transaction.cleanup.interval.ms);
// a walk of 40,000 ids takes about 4 ms.
const idleScanEvery = time.Second

// Backoff of a decided transaction whose completion failed: the expiry
// step retries it after retryBackoffMin, doubling up to retryBackoffMax.
const (
	retryBackoffMin = 100 * time.Millisecond
	retryBackoffMax = 30 * time.Second
)

// failedLocked records a failed completion of t's decision: the expiry
// step retries it after a backoff that doubles with each failure in a
// row, and only the first failure is logged at Error (the rest at Debug).
// Called with mu held, or before the coordinator is shared.
func (c *Coordinator) failedLocked(t *txn, err error) {
	t.failures++
	backoff := retryBackoffMax
	if t.failures <= 16 {
		backoff = min(retryBackoffMin<<(t.failures-1), retryBackoffMax)
	}
	t.retryAt = c.cfg.Clock.Now().Add(backoff)
	commit := t.state == PrepareCommit
	if t.failures == 1 {
		c.cfg.Logger.Error("transaction not completed; the expiry step retries it with backoff", "transactional_id", t.id, "commit", commit, "err", err)
		return
	}
	c.cfg.Logger.Debug("transaction still not completed", "transactional_id", t.id, "commit", commit, "attempts", t.failures, "retry_in", backoff, "err", err)
}

// Expired is one transaction the expiry step aborted.
type Expired struct {
	TransactionalID string
	ProducerID      int64
	Epoch           int16 // the new epoch, which fences the producer
}

// Expire aborts every Ongoing transaction open longer than its timeout
// (strictly, as sessions expire), bumping its producer's epoch; retries
// the completions that failed, each once its backoff is over; forgets the
// ids idle for Settings.TransactionalIDExpiration, looked for once per
// idleScanEvery (Kafka's
// TransactionStateManager.removeExpiredTransactionalIds: only ids with no
// transaction open or being completed, their last update at least that
// long ago, each with a tombstone in the log); and starts a rewrite of
// the log when it pays (compact.go). It returns the aborted transactions,
// sorted by transactional id. Nothing times out except inside this step.
func (c *Coordinator) Expire() []Expired {
	now := c.cfg.Clock.Now()
	type job struct {
		t     *txn
		d     *entry
		fresh bool
	}
	var jobs []job
	var gone []entry
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	for t := range c.active {
		switch {
		case t.busy:
		case t.state == Ongoing && now.Sub(t.started) > t.timeout:
			d := c.abortLocked(t)
			c.stats.TimedOut++
			jobs = append(jobs, job{t: t, d: d, fresh: true})
		case t.state == PrepareCommit || t.state == PrepareAbort:
			if now.Before(t.retryAt) {
				continue
			}
			t.busy = true
			jobs = append(jobs, job{t: t, d: t.decision})
		case t.state != Ongoing:
			delete(c.active, t)
		}
	}
	if !now.Before(c.nextIdleScan) {
		c.nextIdleScan = now.Add(idleScanEvery)
		idle := now.Add(-c.cfg.TransactionalIDExpiration)
		for id, t := range c.txns {
			if t.expirable() && !t.updated.After(idle) {
				gone = append(gone, entry{Kind: kindExpire, ID: id, PID: t.pid, Epoch: t.epoch, At: now.UnixMilli()})
				delete(c.txns, id)
				delete(c.byPID, t.pid)
				c.stats.Expired++
			}
		}
	}
	if len(gone) > 0 {
		// Under the lock, so that no init of a new id of the same name
		// lands before its tombstone. Not synced: a tombstone a crash
		// loses brings the id back, and the next step expires it again.
		if err := c.journal.write(gone...); err != nil {
			c.cfg.Logger.Warn("expired transactional ids not logged; a restart brings them back", "ids", len(gone), "err", err)
		}
		c.cfg.Logger.Info("transactional ids expired", "ids", len(gone), "idle_for", c.cfg.TransactionalIDExpiration)
	}
	c.mu.Unlock()
	slices.SortFunc(jobs, func(a, b job) int { return strings.Compare(a.t.id, b.t.id) })
	var out []Expired
	for _, j := range jobs {
		if j.fresh {
			c.cfg.Logger.Info("transaction timed out; aborted", "transactional_id", j.t.id, "producer_id", j.d.PID, "epoch", j.d.Epoch)
			_ = c.finish(j.t, j.d, true) // a failure is logged and retried (failedLocked)
			out = append(out, Expired{TransactionalID: j.t.id, ProducerID: j.d.PID, Epoch: j.d.Epoch})
		} else {
			_ = c.complete(j.t, j.d)
		}
	}
	c.startCompaction()
	return out
}
