package coordinator

// Offsets retention (Config.OffsetsRetention), Kafka's
// offsets.retention.minutes, run by the chapter's one expiry step instead
// of Kafka's periodic cleanup (GroupCoordinatorShard.cleanupGroupMetadata,
// every offsets.retention.check.interval.ms). It is off by default: the
// chapter keeps offsets, and groups, for ever.
//
// Which offsets expire follows Kafka's OffsetExpirationCondition for each
// kind of group; an offset expires once now - base >= retention, so at
// exactly retention after its base it is gone (unlike a session, which
// is alive at its exact deadline):
//
//   - an Empty classic group (ClassicGroup.offsetExpirationCondition of a
//     group with a protocol type, KIP-211, Kafka 2.1+): the base is when
//     the group became Empty, for every offset whatever its commit time;
//     the group is deleted with them (cleanupGroupMetadata, then
//     maybeDeleteGroup);
//   - an Empty consumer (KIP-848) group (ConsumerGroup
//     .offsetExpirationCondition): each offset's commit time; the group
//     is deleted once none is left and it has been Empty for the
//     retention (Kafka deletes it at the next cleanup, within
//     offsets.retention.check.interval.ms);
//   - a group known only by its offsets (a consumer with a manual
//     assignment, as Kafka's group without a protocol type; or any group
//     after a restart, since group state is not kept, as Kafka's group
//     whose metadata has no state timestamp): each offset's commit time;
//     the group goes with its last offset;
//   - a group with members: nothing. Kafka also expires, by commit time,
//     the offsets of topics no member subscribes to.
//
// An offset without a commit time (in a file written before they were
// kept, or committed at the manual clock's start, Unix 0, which stamps 0)
// never expires. A commit or removal still on its way to the store
// postpones its group's turn to the next step.
//
// The sweep visits only groups that may be due: retainDue maps every
// candidate (a group without members) to a lower bound on when it may
// next lose something, and retainFloor is the least of those bounds, so
// most expiry steps pass over retention at once.

import (
	"cmp"
	"slices"
	"time"
)

// ExpiredOffsets is what the retention sweep removed from one group.
type ExpiredOffsets struct {
	Group string
	// Offsets is how many committed offsets were removed.
	Offsets int
	// Deleted reports that the group itself was deleted: nothing is left
	// of it, and it no longer counts against Config.MaxGroups.
	Deleted bool
}

// farFuture is a floor beyond every deadline and due time: the floor when
// nothing is pending.
func farFuture() time.Time { return time.Unix(1<<40, 0) }

// groupEmptied records that g has had no members since now and puts it on
// the retention schedule. Called with mu held.
func (c *Coordinator) groupEmptied(g *group) {
	g.emptySince = c.clock.Now()
	due := g.emptySince.Add(c.retention)
	if g.typ == ConsumerGroup {
		due = g.emptySince // its offsets expire by commit time, maybe long past
	}
	c.retainAt(g.id, due)
}

// retainAt makes the sweep visit group at due or before. Called with mu
// held; nothing happens when retention is off.
func (c *Coordinator) retainAt(group string, due time.Time) {
	if c.retention == 0 {
		return
	}
	if cur, ok := c.retainDue[group]; !ok || due.Before(cur) {
		c.retainDue[group] = due
	}
	if due.Before(c.retainFloor) {
		c.retainFloor = due
	}
}

// retentionSweep is one sweep's removals and the store operations to wait
// for once mu is released (nil: nothing to wait for), one per removal.
type retentionSweep struct {
	removed []ExpiredOffsets
	waits   []func() error
}

// sweepRetention visits every candidate that is due: it orders the
// removal of what has expired, forgets the groups left with nothing and
// moves the floor to the next due time. Called with mu held.
func (c *Coordinator) sweepRetention(now time.Time) retentionSweep {
	var sweep retentionSweep
	if c.retention == 0 || now.Before(c.retainFloor) {
		return sweep
	}
	floor := farFuture()
	for id, due := range c.retainDue {
		if !now.Before(due) {
			var r ExpiredOffsets
			var wait func() error
			r, wait, due = c.retainGroup(id, now)
			if r.Offsets > 0 || r.Deleted {
				sweep.removed = append(sweep.removed, r)
				sweep.waits = append(sweep.waits, wait)
			}
			if due.IsZero() { // no longer a candidate
				continue
			}
		}
		if due.Before(floor) {
			floor = due
		}
	}
	c.retainFloor = floor
	return sweep
}

// retainGroup applies retention to one due group and returns what it
// removed, the wait for the removal, and when the group is next due (zero
// when it is a candidate no more). It updates retainDue. Called with mu
// held.
func (c *Coordinator) retainGroup(id string, now time.Time) (r ExpiredOffsets, wait func() error, next time.Time) {
	r.Group = id
	g := c.groups[id]
	_, known := c.known[id]
	if (g != nil && len(g.members) > 0) || !known {
		// A candidate again once it loses its members (groupEmptied) or
		// is created by a commit (CommitDirect).
		delete(c.retainDue, id)
		return r, nil, time.Time{}
	}
	busy := c.inflight[id] > 0
	if busy {
		c.retainDue[id] = now
		return r, nil, now
	}
	entries := c.store.Committed(id)
	if g != nil && g.typ == ClassicGroup {
		if next = g.emptySince.Add(c.retention); now.Before(next) {
			c.retainDue[id] = next
			return r, nil, next
		}
		r.Offsets, r.Deleted = len(entries), true
		return r, c.deleteGroup(id, len(entries)), time.Time{}
	}
	cutoff := now.Add(-c.retention)
	kept := 0
	for _, e := range entries {
		switch {
		case e.CommitTimestampMs == 0: // never expires
			kept++
		case e.CommitTimestampMs <= cutoff.UnixMilli():
			r.Offsets++
		default:
			kept++
			if at := time.UnixMilli(e.CommitTimestampMs).Add(c.retention); next.IsZero() || at.Before(next) {
				next = at
			}
		}
	}
	if r.Offsets > 0 {
		// Which entries go is decided when the removal is applied, so a
		// commit ordered before it is never lost.
		wait = c.track(id, c.store.Expire(id, cutoff))
	}
	switch {
	case kept == 0 && (g == nil || !now.Before(g.emptySince.Add(c.retention))):
		if g != nil {
			delete(c.groups, id)
		}
		c.forget(id)
		r.Deleted = true
		return r, wait, time.Time{}
	case kept == 0: // an Empty consumer group, not Empty for long enough
		next = g.emptySince.Add(c.retention)
	case next.IsZero(): // only offsets without a commit time are left
		delete(c.retainDue, id)
		return r, wait, time.Time{}
	}
	c.retainDue[id] = next
	return r, wait, next
}

// finishSweep waits for a sweep's removals, logs them, tells the observer
// of the groups deleted and returns what was removed, sorted by group. A
// removal the disk refused is logged at Error and left out; its group
// stays known. Called without mu held.
func (c *Coordinator) finishSweep(sweep retentionSweep) []ExpiredOffsets {
	order := make([]int, len(sweep.removed))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return cmp.Compare(sweep.removed[a].Group, sweep.removed[b].Group) })
	var out []ExpiredOffsets
	var deleted []string
	for _, i := range order {
		r := sweep.removed[i]
		if wait := sweep.waits[i]; wait != nil {
			if err := wait(); err != nil {
				c.logger.Error("offsets retention failed", "group", r.Group, "err", err)
				c.keepIfCommitted(r.Group)
				continue
			}
		}
		if r.Offsets > 0 {
			c.logger.Info("offsets expired", "group", r.Group, "offsets", r.Offsets)
		}
		out = append(out, r)
		if r.Deleted {
			deleted = append(deleted, r.Group)
		}
	}
	c.reportDeleted("retention", deleted)
	return out
}
