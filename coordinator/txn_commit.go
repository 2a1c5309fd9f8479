package coordinator

import (
	"cmp"
	"maps"
	"slices"

	"github.com/minibroker/minibroker/offsets"
)

// Transactional offset commits (KIP-98, KIP-447). A TxnOffsetCommit is
// fenced exactly as an OffsetCommit is, by validateCommit, the one place
// the chapter's checks live; what it commits is staged per group and
// producer id, and becomes the group's committed offsets only when the
// transaction commits (EndTxnOffsets). Staged offsets are memory only:
// the transaction coordinator logs them with its commit decision, so a
// restart applies them again if the decision was logged, and forgets
// them (an abort) if it was not.

// txnStaged is every group's staged offsets: group -> producer id ->
// partition -> entry. Guarded by mu. Bounded by the partitions of the
// catalog times the transactional producers.
type txnStaged map[string]map[int64]map[offsets.Key]offsets.Entry

// StageTxnCommit validates a TxnOffsetCommit as CommitMember validates an
// OffsetCommit (generation -1 with an empty member id is a commit that
// names no member, checked as CommitDirect checks one, as Kafka accepts
// it from producers that do not send the group's metadata), then stages
// its entries for producerID. All-or-nothing. stage runs nothing durable:
// the answer may be sent at once.
func (c *Coordinator) StageTxnCommit(producerID int64, req CommitRequest) error {
	if err := c.checkGroupID(req.Group); err != nil {
		return err
	}
	if err := c.checkMemberID(req.MemberID); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	var err error
	if req.Generation < 0 && req.MemberID == "" {
		err = c.validateDirect(req.Entries)
	} else if err = c.validateCommit(req); err == nil {
		err = c.validateEntries(req.Entries)
	}
	if err != nil {
		return err
	}
	// The group limit is checked here, where the offsets are staged, and
	// never when the transaction commits them: a decided transaction
	// must complete (EndTxnOffsets admits the group whatever the count).
	// After every other check, so a refused commit admits no group.
	if len(req.Entries) > 0 {
		if err := c.admitGroup(req.Group); err != nil {
			return err
		}
	}
	if c.staged == nil {
		c.staged = txnStaged{}
	}
	byPID := c.staged[req.Group]
	if byPID == nil {
		byPID = map[int64]map[offsets.Key]offsets.Entry{}
		c.staged[req.Group] = byPID
	}
	parts := byPID[producerID]
	if parts == nil {
		parts = map[offsets.Key]offsets.Entry{}
		byPID[producerID] = parts
	}
	for _, e := range c.stamp(req.Entries) {
		parts[offsets.Key{Topic: e.Topic, Partition: e.Partition}] = e
	}
	return nil
}

// TxnStaged returns what producerID staged for group, sorted by topic and
// partition.
func (c *Coordinator) TxnStaged(group string, producerID int64) []offsets.Entry {
	c.mu.Lock()
	defer c.mu.Unlock()
	parts := c.staged[group][producerID]
	out := slices.Collect(maps.Values(parts))
	sortEntries(out)
	return out
}

// EndTxnOffsets ends producerID's staged offsets for group: on commit,
// entries (what the transaction coordinator logged with its decision)
// become the group's committed offsets, durably, unfenced: the fence ran
// when they were staged, as in Kafka, and so did the group limit
// (Config.MaxGroups), which the commit does not check again: the group
// is admitted even past it (a group deleted since, or one a restart
// replays), since a decided transaction must complete. Then the staged
// offsets are forgotten, so that OffsetFetch with RequireStable stops
// answering UNSTABLE_OFFSET_COMMIT only once the commit is durable.
func (c *Coordinator) EndTxnOffsets(group string, producerID int64, entries []offsets.Entry, commit bool) error {
	var err error
	if commit && len(entries) > 0 {
		c.mu.Lock()
		c.known[group] = struct{}{}
		if g := c.groups[group]; g == nil || len(g.members) == 0 {
			c.retainAt(group, c.clock.Now().Add(c.retention))
		}
		wait := c.track(group, c.store.Enqueue(group, entries))
		c.mu.Unlock()
		err = wait()
	}
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if byPID := c.staged[group]; byPID != nil {
		delete(byPID, producerID)
		if len(byPID) == 0 {
			delete(c.staged, group)
		}
	}
	return nil
}

// TxnPending reports whether a transaction holds staged offsets for one
// partition of group (OffsetFetch with RequireStable answers
// UNSTABLE_OFFSET_COMMIT for it, as Kafka's hasPendingOffsetCommitsForTopicPartition).
func (c *Coordinator) TxnPending(group, topic string, partition int32) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, parts := range c.staged[group] {
		if _, ok := parts[offsets.Key{Topic: topic, Partition: partition}]; ok {
			return true
		}
	}
	return false
}

// TxnPendingKeys returns the partitions of group that some transaction
// holds staged offsets for, nil when none. EndTxnOffsets forgets staged
// offsets only after the commit is applied, so a partition missing here
// has its committed offset up to date for every commit ended so far: an
// OffsetFetch with RequireStable asks this first and reads the committed
// offsets after it, never in the other order (a commit ending in
// between would be answered with the offset before it, and no error).
func (c *Coordinator) TxnPendingKeys(group string) map[offsets.Key]bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out map[offsets.Key]bool
	for _, parts := range c.staged[group] {
		for k := range parts {
			if out == nil {
				out = map[offsets.Key]bool{}
			}
			out[k] = true
		}
	}
	return out
}

// TxnStagedView is one producer's staged offsets in one group.
type TxnStagedView struct {
	Group      string
	ProducerID int64
	Entries    []offsets.Entry
}

// TxnStagedViews returns every staged offset, sorted by group and
// producer id (the admin API).
func (c *Coordinator) TxnStagedViews() []TxnStagedView {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []TxnStagedView
	for _, g := range slices.Sorted(maps.Keys(c.staged)) {
		for _, pid := range slices.Sorted(maps.Keys(c.staged[g])) {
			es := slices.Collect(maps.Values(c.staged[g][pid]))
			sortEntries(es)
			out = append(out, TxnStagedView{Group: g, ProducerID: pid, Entries: es})
		}
	}
	return out
}

// OnExpire registers fn to run at the end of every expiry step, without
// the lock: the transaction coordinator's timeouts run there, so that
// whatever drives the expiry step (the ticker, POST /v1/expire, a lab's
// manual clock) drives them too.
func (c *Coordinator) OnExpire(fn func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.expireHooks = append(c.expireHooks, fn)
}

// runExpireHooks runs what OnExpire registered. Called without mu.
func (c *Coordinator) runExpireHooks() {
	c.mu.Lock()
	hooks := slices.Clone(c.expireHooks)
	c.mu.Unlock()
	for _, fn := range hooks {
		fn()
	}
}

// sortEntries sorts entries by topic and partition.
func sortEntries(es []offsets.Entry) {
	slices.SortFunc(es, func(a, b offsets.Entry) int {
		if r := cmp.Compare(a.Topic, b.Topic); r != 0 {
			return r
		}
		return cmp.Compare(a.Partition, b.Partition)
	})
}

// CheckGroupID applies the group id rules (AddOffsetsToTxn names a group).
func (c *Coordinator) CheckGroupID(id string) error { return c.checkGroupID(id) }
