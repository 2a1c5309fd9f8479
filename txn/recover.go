package txn

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/minibroker/minibroker/records"
)

// recover rebuilds the transactional ids from the journal and leaves no
// transaction half done: a decision logged without its completion is
// completed (offsets again, and markers where the partition still holds
// that transaction open, see writeMarkers); a transaction begun and not
// decided, or whose producer has records in a partition the log has no
// open transaction for (its begin record was not synced), is aborted at
// a bumped epoch, with markers in every partition that holds its
// records; and a transaction the partition logs hold open for a producer
// no transactional id owns (its id's log was lost) gets an abort marker
// at its own epoch. Then the journal is rewritten if that pays.
//
// A decision the broker made is never a reason to refuse to start: one
// whose completion fails now stays in its Prepare state, which the expiry
// step retries (Kafka's coordinator loads such a transaction and sends its
// markers again, TransactionStateManager.loadTransactionsForTxnTopicPartition).
func (c *Coordinator) recover(entries []entry) error {
	c.recovering = true
	defer func() { c.recovering = false }()
	now := c.cfg.Clock.Now()
	for id, f := range foldJournal(entries) {
		e := f.init
		t := &txn{id: id, pid: e.PID, epoch: e.Epoch, lastEpoch: e.LastEpoch,
			timeout: time.Duration(e.TimeoutMs) * time.Millisecond, state: Empty, updated: now}
		at := e.At
		if s := f.state; s != nil {
			at = max(at, s.At)
			switch s.Kind {
			case kindBegin:
				t.state, t.started = Ongoing, now
			case kindEnd:
				d := *s
				t.decision = &d
				t.state = PrepareAbort
				if s.Commit {
					t.state = PrepareCommit
				}
			case kindDone:
				t.state = CompleteAbort
				if s.Commit {
					t.state = CompleteCommit
				}
			}
		}
		if at > 0 {
			t.updated = time.UnixMilli(at)
		}
		c.txns[id], c.byPID[t.pid] = t, t
		if t.state == Ongoing || t.state == PrepareCommit || t.state == PrepareAbort {
			c.active[t] = struct{}{}
		}
	}
	// Decisions first: their markers close what the logs hold open.
	for _, id := range slices.Sorted(maps.Keys(c.txns)) {
		t := c.txns[id]
		if t.state != PrepareCommit && t.state != PrepareAbort {
			continue
		}
		c.cfg.Logger.Info("completing a transaction decided before the restart", "transactional_id", id, "commit", t.state == PrepareCommit)
		t.busy = true
		_ = c.complete(t, t.decision) // a failure stays Prepare, logged, for the expiry step (failedLocked)
	}
	open := map[int64][]records.TopicPartition{}
	epochs := map[int64]int16{}
	for tp, txns := range c.cfg.Partitions.OpenTransactions() {
		for _, o := range txns {
			open[o.ProducerID] = append(open[o.ProducerID], tp)
			epochs[o.ProducerID] = max(epochs[o.ProducerID], o.ProducerEpoch)
		}
	}
	// A transaction begun, or one whose begin the crash lost (it is not
	// synced) while the logs hold its records, is aborted; all of them
	// with one sync of the log.
	var aborts []*txn
	for _, id := range slices.Sorted(maps.Keys(c.txns)) {
		t := c.txns[id]
		if t.state == PrepareCommit || t.state == PrepareAbort {
			delete(open, t.pid) // its own decision closes what it holds open
			continue
		}
		if t.state != Ongoing && len(open[t.pid]) == 0 {
			continue
		}
		c.cfg.Logger.Info("aborting a transaction left open by the restart", "transactional_id", id, "producer_id", t.pid)
		t.parts = map[records.TopicPartition]struct{}{}
		for _, tp := range open[t.pid] {
			t.parts[tp] = struct{}{}
		}
		delete(open, t.pid)
		aborts = append(aborts, t)
	}
	if err := c.abortAll(aborts); err != nil {
		return err
	}
	for _, pid := range slices.Sorted(maps.Keys(open)) {
		if t := c.byPID[pid]; t != nil && t.epoch > epochs[pid] {
			epochs[pid] = t.epoch
		}
		c.cfg.Logger.Warn("aborting a transaction no transactional id owns", "producer_id", pid, "partitions", len(open[pid]))
		d := &entry{Kind: kindEnd, PID: pid, Epoch: epochs[pid], Partitions: open[pid]}
		if err := c.writeMarkers(d); err != nil {
			return err
		}
		c.stats.Aborted++
	}
	if c.journal.shouldCompact() {
		if _, err := c.journal.compact(); err != nil {
			c.cfg.Logger.Warn("transaction log not rewritten at start-up; the expiry step tries again", "err", err)
		}
	}
	return nil
}

// abortAll aborts the transactions a restart found open, at bumped
// epochs: their decisions are logged with one sync, then every marker is
// written and awaited at once, then their done records are written (not
// synced: a restart that finds a decision without its done writes only
// the markers still missing). Before the coordinator is shared.
func (c *Coordinator) abortAll(ts []*txn) error {
	if len(ts) == 0 {
		return nil
	}
	ds := make([]*entry, len(ts))
	logged := make([]entry, len(ts))
	for i, t := range ts {
		ds[i] = c.abortLocked(t)
		logged[i] = *ds[i]
	}
	if err := c.journal.append(logged...); err != nil {
		return err
	}
	m := records.Marker{Timestamp: c.cfg.Clock.Now().UnixMilli()}
	pending := make([][]*records.Pending, len(ds))
	failed := make([]error, len(ds))
	for i, d := range ds {
		m.ProducerID, m.ProducerEpoch = d.PID, d.Epoch
		for _, tp := range d.Partitions {
			p, err := c.cfg.Partitions.AppendMarker(tp.Topic, tp.Partition, m)
			if err != nil {
				failed[i] = err
				continue
			}
			pending[i] = append(pending[i], p)
		}
	}
	now := c.cfg.Clock.Now()
	var done []entry
	for i, d := range ds {
		for _, p := range pending[i] {
			if _, err := p.Wait(); err != nil && failed[i] == nil {
				failed[i] = err
			}
		}
		if failed[i] == nil {
			done = append(done, entry{Kind: kindDone, ID: d.ID, PID: d.PID, Epoch: d.Epoch, At: now.UnixMilli()})
		}
	}
	if err := c.journal.write(done...); err != nil {
		return err
	}
	for i, t := range ts {
		t.busy = false
		if failed[i] != nil {
			// Decided and logged: the expiry step completes it.
			c.failedLocked(t, fmt.Errorf("%w: markers: %w", ErrStorage, failed[i]))
			continue
		}
		t.state, t.updated = CompleteAbort, now
		t.reset()
		c.stats.Aborted++
	}
	return nil
}
