package coordinator

import (
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/minibroker/minibroker/offsets"
)

// OffsetStore is what the coordinator needs of the committed-offset store.
// *offsets.Store implements it.
type OffsetStore interface {
	// Enqueue fixes a commit's place in the store's order without blocking
	// and returns a function that waits until the commit is durable.
	Enqueue(group string, entries []offsets.Entry) (wait func() error)
	// Committed returns a group's committed offsets, sorted.
	Committed(group string) []offsets.Entry
	// Lookup returns one partition's committed offset.
	Lookup(group, topic string, partition int32) (offsets.Entry, bool)
	// Groups returns the sorted names of groups with committed offsets.
	Groups() []string
	// Delete removes every committed offset of group, DeleteOffsets those
	// of keys, and Expire those committed at a known time at or before
	// cutoff (decided when the removal is applied). Each is ordered with
	// commits as Enqueue orders them and returns a function that waits
	// until it is durable.
	Delete(group string) (wait func() error)
	DeleteOffsets(group string, keys []offsets.Key) (wait func() error)
	Expire(group string, cutoff time.Time) (wait func() error)
}

// Config configures a Coordinator. Zero fields mean the default.
type Config struct {
	// Clock is the time source. Required.
	Clock Clock
	// Store holds committed offsets. Default: an in-memory store.
	Store OffsetStore
	// Topics is the topic catalog the coordinator reads (joins check
	// subscriptions against it, rebalances assign its partitions, direct
	// commits must name its partitions). Default: no topics.
	Topics Topics
	// Settings are the user settings (settings.go).
	Settings
	// Logger receives one Info event per rebalance. Default: discard.
	Logger *slog.Logger
	// OnRebalance, if set, is called after every rebalance, without the
	// coordinator's lock held. Calls from concurrent requests may arrive
	// out of order; Rebalance.Generation orders them within a group.
	OnRebalance func(Rebalance)
	// OnGroupDeleted, if set, is called with the name of every group
	// deleted (DeleteGroups, DeleteOffsets removing a group's last offset,
	// or retention) once the deletion is durable, without the lock held.
	// Like OnRebalance calls, it may arrive before the report of a
	// rebalance that happened before the deletion.
	OnGroupDeleted func(group string)
}

// Defaults for Config's zero fields.
const (
	DefaultMinSessionTimeout         = 10 * time.Millisecond
	DefaultMaxSessionTimeout         = 30 * time.Minute
	DefaultConsumerSessionTimeout    = 45 * time.Second
	DefaultConsumerHeartbeatInterval = 5 * time.Second
)

// Validate checks the configuration's ranges and relations.
func (cfg *Config) Validate() error {
	if cfg.Clock == nil {
		return errors.New("coordinator: Config.Clock is required")
	}
	return cfg.Settings.Validate()
}

// Coordinator owns every consumer group and the topic catalog. It is safe
// for concurrent use; each method holds mu for its whole (short, non-
// blocking) run, except that commits and deletions wait for the disk
// after releasing it.
type Coordinator struct {
	clock        Clock
	store        OffsetStore
	logger       *slog.Logger
	onRebalance  func(Rebalance)
	onDeleted    func(string)
	retention    time.Duration // Config.OffsetsRetention; 0: off
	minSession   time.Duration
	maxSession   time.Duration
	maxGroupSize int
	maxGroups    int
	maxMetadata  int
	maxIDBytes   int

	maxMemberMetadata int
	maxGroupMetadata  int
	// consumerSession and consumerInterval: Config's consumer times.
	consumerSession  time.Duration
	consumerInterval time.Duration

	mu     sync.Mutex
	groups map[string]*group // guarded by mu
	// staged and expireHooks serve transactions (txn_commit.go). Guarded
	// by mu.
	staged      txnStaged
	expireHooks []func()
	// known holds the name of every group: those in groups and those
	// known only by committed offsets (or by a commit on its way to the
	// store). It is what MaxGroups counts. Guarded by mu; a group leaves
	// it when it is deleted (delete.go, retention.go).
	known map[string]struct{}
	// inflight counts, per group, the store operations enqueued and not
	// yet waited for (track), so that a group whose offsets look gone is
	// not forgotten while a commit to it is still on its way. Guarded by
	// mu.
	inflight map[string]int
	// retainDue and retainFloor: the retention sweep's schedule
	// (retention.go); nil and unused when retention is off. Guarded by
	// mu.
	retainDue   map[string]time.Time
	retainFloor time.Time
	topics      Topics // read under mu; it has a lock of its own, taken after mu
	seq         uint64 // guarded by mu; the last member id sequence
	// expireFloor is a lower bound on every member's and pending id's
	// deadline, so Expire can return at once until the clock passes it
	// instead of visiting every member on every tick. Guarded by mu;
	// lowered wherever a deadline is set earlier than it, recomputed by
	// every full scan. Heartbeats only move deadlines later.
	expireFloor time.Time
	// watch is the channel Changed handed out, closed and cleared by the
	// next change (watch.go); nil while nobody watches. Atomic, so that
	// it is read and cleared under mu and taken without it.
	watch atomic.Pointer[chan struct{}]
}

// New returns a Coordinator with no groups.
func New(cfg Config) (*Coordinator, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	set := cfg.Settings.WithDefaults()
	c := &Coordinator{
		clock:        cfg.Clock,
		store:        cfg.Store,
		logger:       cfg.Logger,
		onRebalance:  cfg.OnRebalance,
		onDeleted:    cfg.OnGroupDeleted,
		retention:    set.OffsetsRetention,
		maxGroupSize: set.MaxGroupSize,
		maxGroups:    set.MaxGroups,
		maxMetadata:  set.MaxMetadataBytes,
		maxIDBytes:   set.MaxIDBytes,

		maxMemberMetadata: set.MaxMemberMetadataBytes,
		maxGroupMetadata:  set.MaxGroupMetadataBytes,
		groups:            make(map[string]*group),
		known:             make(map[string]struct{}),
		inflight:          make(map[string]int),
		topics:            cfg.Topics,
	}
	if c.retention > 0 {
		c.retainDue = make(map[string]time.Time)
	}
	if c.topics == nil {
		c.topics = StaticTopics{}
	}
	if c.store == nil {
		c.store = offsets.NewMemory()
	}
	// Groups already in the store count against MaxGroups, even beyond it:
	// a lower limit refuses new groups, never offsets already committed.
	// With retention on, each is due at once: the first expiry step reads
	// its commit times (the state of a group is not kept across a restart,
	// so it is a group known only by its offsets).
	for _, g := range c.store.Groups() {
		c.known[g] = struct{}{}
		if c.retention > 0 {
			c.retainDue[g] = time.Time{}
		}
	}
	if c.logger == nil {
		c.logger = slog.New(slog.DiscardHandler)
	}
	c.minSession, c.maxSession = set.MinSessionTimeout, set.MaxSessionTimeout
	c.consumerSession, c.consumerInterval = set.ConsumerSessionTimeout, set.ConsumerHeartbeatInterval
	return c, nil
}

// newMemberID returns the next member id, "<client-id or member>-<seq>".
// The sequence is zero-padded so that ids of one client sort in join order
// and assignments are reproducible. Called with mu held.
func (c *Coordinator) newMemberID(clientID string) string {
	if clientID == "" {
		clientID = "member"
	}
	c.seq++
	return fmt.Sprintf("%s-%06d", clientID, c.seq)
}
