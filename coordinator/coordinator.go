package coordinator

import (
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"sync"
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
	// Groups returns the sorted names of groups with committed offsets.
	Groups() []string
}

// Config configures a Coordinator. Zero fields mean the default.
type Config struct {
	// Clock is the time source. Required.
	Clock Clock
	// Store holds committed offsets. Default: an in-memory store.
	Store OffsetStore
	// Topics is the initial topic catalog: name to partition count.
	Topics map[string]int32
	// MinSessionTimeout and MaxSessionTimeout bound a member's session
	// timeout (Kafka's group.min.session.timeout.ms, default 6 s there;
	// 10 ms here so labs and tests can use short sessions) and
	// group.max.session.timeout.ms (default 30 min, as Kafka).
	MinSessionTimeout time.Duration
	MaxSessionTimeout time.Duration
	// Logger receives one Info event per rebalance. Default: discard.
	Logger *slog.Logger
	// OnRebalance, if set, is called after every rebalance, without the
	// coordinator's lock held. Calls from concurrent requests may arrive
	// out of order; Rebalance.Generation orders them within a group.
	OnRebalance func(Rebalance)
}

// Defaults for Config's zero fields.
const (
	DefaultMinSessionTimeout = 10 * time.Millisecond
	DefaultMaxSessionTimeout = 30 * time.Minute
)

// Validate checks the configuration's ranges and relations.
func (cfg *Config) Validate() error {
	if cfg.Clock == nil {
		return errors.New("coordinator: Config.Clock is required")
	}
	if cfg.MinSessionTimeout < 0 || cfg.MaxSessionTimeout < 0 {
		return errors.New("coordinator: session timeout bounds must not be negative")
	}
	lo, hi := cfg.sessionBounds()
	if lo > hi {
		return fmt.Errorf("coordinator: min session timeout %v is above max %v", lo, hi)
	}
	for name, n := range cfg.Topics {
		if err := validateTopic(name, n); err != nil {
			return fmt.Errorf("coordinator: topic %q: %w", name, err)
		}
	}
	return nil
}

func (cfg *Config) sessionBounds() (time.Duration, time.Duration) {
	lo, hi := cfg.MinSessionTimeout, cfg.MaxSessionTimeout
	if lo == 0 {
		lo = DefaultMinSessionTimeout
	}
	if hi == 0 {
		hi = DefaultMaxSessionTimeout
	}
	return lo, hi
}

// Coordinator owns every consumer group and the topic catalog. It is safe
// for concurrent use; each method holds mu for its whole (short, non-
// blocking) run, except that Commit waits for the disk after releasing it.
type Coordinator struct {
	clock       Clock
	store       OffsetStore
	logger      *slog.Logger
	onRebalance func(Rebalance)
	minSession  time.Duration
	maxSession  time.Duration

	mu     sync.Mutex
	groups map[string]*group // guarded by mu; groups are never deleted
	topics map[string]int32  // guarded by mu; topics are never deleted
	seq    uint64            // guarded by mu; the last member id sequence
}

// New returns a Coordinator with no groups.
func New(cfg Config) (*Coordinator, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	c := &Coordinator{
		clock:       cfg.Clock,
		store:       cfg.Store,
		logger:      cfg.Logger,
		onRebalance: cfg.OnRebalance,
		groups:      make(map[string]*group),
		topics:      maps.Clone(cfg.Topics),
	}
	if c.topics == nil {
		c.topics = make(map[string]int32)
	}
	if c.store == nil {
		c.store = offsets.NewMemory()
	}
	if c.logger == nil {
		c.logger = slog.New(slog.DiscardHandler)
	}
	c.minSession, c.maxSession = cfg.sessionBounds()
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
