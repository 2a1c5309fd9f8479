package txn

import (
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
// records; and a transaction the
// partition logs hold open for a producer no transactional id owns
// (its id's log was lost) gets an abort marker at its own epoch. Then the
// journal is rewritten to what it now says.
func (c *Coordinator) recover(entries []entry) error {
	c.recovering = true
	defer func() { c.recovering = false }()
	now := c.cfg.Clock.Now()
	for _, e := range entries {
		t := c.txns[e.ID]
		if e.Kind == kindInit {
			if t == nil {
				t = &txn{id: e.ID}
				c.txns[e.ID] = t
			} else {
				delete(c.byPID, t.pid)
			}
			t.pid, t.epoch, t.lastEpoch, t.timeout = e.PID, e.Epoch, e.LastEpoch, time.Duration(e.TimeoutMs)*time.Millisecond
			t.state, t.updated = Empty, now
			t.reset()
			c.byPID[t.pid] = t
			continue
		}
		if t == nil || t.pid != e.PID {
			continue // a record of a producer id the id no longer holds
		}
		switch e.Kind {
		case kindBegin:
			t.state, t.started = Ongoing, now
		case kindEnd:
			if e.Epoch != t.epoch {
				t.lastEpoch, t.epoch = t.epoch, e.Epoch
			}
			d := e
			t.decision = &d
			t.state = PrepareAbort
			if e.Commit {
				t.state = PrepareCommit
			}
		case kindDone:
			t.decision = nil
			t.state = CompleteAbort
			if e.Commit {
				t.state = CompleteCommit
			}
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
		if err := c.complete(t, t.decision); err != nil {
			return err
		}
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
	// synced) while the logs hold its records, is aborted.
	for _, id := range slices.Sorted(maps.Keys(c.txns)) {
		t := c.txns[id]
		if t.state != Ongoing && len(open[t.pid]) == 0 {
			continue
		}
		c.cfg.Logger.Info("aborting a transaction left open by the restart", "transactional_id", id, "producer_id", t.pid)
		t.parts = map[records.TopicPartition]struct{}{}
		for _, tp := range open[t.pid] {
			t.parts[tp] = struct{}{}
		}
		delete(open, t.pid)
		d := c.abortLocked(t)
		if err := c.finish(t, d, true); err != nil {
			return err
		}
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
	return c.journal.rewrite(c.snapshotLocked())
}

// snapshotLocked is the journal that says what memory says, for a
// coordinator with no transaction in a Prepare state: each id's init, and
// its state if a transaction is open or ended. Called with mu held (or
// before the coordinator is shared).
func (c *Coordinator) snapshotLocked() []entry {
	var out []entry
	for _, id := range slices.Sorted(maps.Keys(c.txns)) {
		t := c.txns[id]
		out = append(out, entry{Kind: kindInit, ID: id, PID: t.pid, Epoch: t.epoch, LastEpoch: t.lastEpoch, TimeoutMs: t.timeout.Milliseconds()})
		switch t.state {
		case Ongoing:
			out = append(out, entry{Kind: kindBegin, ID: id, PID: t.pid, Epoch: t.epoch})
		case CompleteCommit, CompleteAbort:
			out = append(out, entry{Kind: kindDone, ID: id, PID: t.pid, Epoch: t.epoch, Commit: t.state == CompleteCommit})
		}
	}
	return out
}

// compact rewrites a large journal from memory, when no transaction is
// being completed (so memory and the journal agree).
func (c *Coordinator) compact() {
	if !c.journal.large() {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, t := range c.txns {
		if t.busy || t.state == PrepareCommit || t.state == PrepareAbort {
			return
		}
	}
	if err := c.journal.rewrite(c.snapshotLocked()); err != nil {
		c.cfg.Logger.Error("transaction log not compacted", "err", err)
	}
}
