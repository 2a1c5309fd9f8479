// Package catalog owns the topic catalog: every topic's name, partition
// count and topic id, and its file <data-dir>/topics.json.
//
// A topic is created by saving it first and only then showing it to
// anybody: a Create that cannot reach the disk leaves the catalog as it
// was, so a client never sees a topic that a restart would take back.
// Delete (delete.go) takes a topic out the same way, leaving a pending
// delete until its owner has removed the topic's data (Purge). A create
// appends one line to the journal
// (journal.go) and syncs it, O(1) whatever the number of topics; Open,
// Close and every foldEntries creates fold the journal into the file.
//
// The file, replaced atomically like the offsets file:
//
//	{"version":2,"topics":{"orders":{"partitions":4,"id":"<base64url>","configs":{"retention.bytes":"1048576"}}}}
//
// ("configs" only for a topic with configs of its own, configs.go)
//
// Version 1 files ({"version":1,"topics":{"orders":4}}) still load; their
// topics get ids and the file is rewritten as version 2 at Open.
//
// The package imports only the standard library and internal/atomicfile.
package catalog

import (
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
)

// Limits and names.
const (
	// FileName is the catalog's name inside the data directory.
	FileName = "topics.json"
	// MaxPartitions bounds the partitions of all topics together.
	// Metadata, Fetch and every rebalance walk them, so a single
	// CreateTopics of 2^31-1 partitions would otherwise stall the broker
	// (Kafka bounds partitions only through its controller's quotas).
	MaxPartitions = 100_000
	// maxNameLength is Kafka's limit (Topic.MAX_NAME_LENGTH).
	maxNameLength = 249
)

// Sentinel errors; server/errors.go maps them to Kafka codes.
var (
	// ErrInvalidTopic (INVALID_TOPIC_EXCEPTION): a name Kafka would not
	// accept as a topic.
	ErrInvalidTopic = errors.New("invalid topic name")
	// ErrTopicExists (TOPIC_ALREADY_EXISTS): Create of a known topic.
	ErrTopicExists = errors.New("topic already exists")
	// ErrInvalidPartitions (INVALID_PARTITIONS): a partition count below
	// 1, or one that would take the catalog past its partition limit.
	ErrInvalidPartitions = errors.New("invalid partition count")
	// ErrStorage (KAFKA_STORAGE_ERROR): the catalog could not be saved;
	// nothing changed.
	ErrStorage = errors.New("topic catalog not saved")
)

// ID is a topic id (Kafka's Uuid): 16 bytes, never all zero.
type ID [16]byte

// String renders id as Kafka prints a Uuid: unpadded URL-safe base64.
func (id ID) String() string { return encodeID(id) }

// Topic is one topic of the catalog.
type Topic struct {
	Name       string
	Partitions int32
	ID         ID
	// Configs are the topic's own configs, by Kafka's names (the
	// broker's defaults stand for every other); nil for none. A Topic's
	// map is never modified: SetConfigs makes a new one.
	Configs map[string]string
}

// Config configures a Catalog. Zero fields mean the default.
type Config struct {
	// Dir is the data directory holding FileName. Empty keeps the
	// catalog in memory only.
	Dir string
	// MaxPartitions bounds the partitions of all topics together.
	// Default MaxPartitions.
	MaxPartitions int
	// Prepare, if set, runs for each new topic before it is saved and
	// shown: the broker creates the topic's partition logs there, so a
	// topic is never visible without them. Its error fails the Create.
	Prepare func(Topic) error
	// Abandon, if set, runs for a topic Prepare succeeded for that could
	// not be saved: the broker deletes the partition logs again, so a
	// failed Create leaves nothing on disk.
	Abandon func(Topic)
	// AbandonFrom, if set, runs for a topic whose new partitions
	// (AddPartitions) Prepare made and that could not be saved: the
	// broker deletes the partitions from the first number given on.
	AbandonFrom func(t Topic, from int32)
	// Logger receives the catalog's events (topics created, a version 1
	// file upgraded). Default: discard.
	Logger *slog.Logger
}

// Catalog is the topic catalog. It is safe for concurrent use.
type Catalog struct {
	file          *file    // nil: memory only
	journal       *journal // guarded by create; nil: memory only
	maxPartitions int
	prepare       func(Topic) error
	abandon       func(Topic)
	abandonFrom   func(Topic, int32)
	logger        *slog.Logger

	// create serializes Create, so that topics are saved in the order
	// they become visible. Lock order: create before mu.
	create sync.Mutex

	mu         sync.RWMutex
	topics     map[string]Topic // guarded by mu
	byID       map[ID]string    // guarded by mu
	deleting   map[string]ID    // guarded by mu; deleted, data not yet purged
	partitions int64            // guarded by mu; of all topics together
	seq        uint64           // guarded by create; of the last journal line
}

// Open loads the catalog of cfg.Dir (empty when the file does not exist
// yet). A file that is not a valid catalog is an error naming its path;
// it is never overwritten.
func Open(cfg Config) (*Catalog, error) {
	c := &Catalog{
		maxPartitions: cfg.MaxPartitions,
		prepare:       cfg.Prepare,
		abandon:       cfg.Abandon,
		abandonFrom:   cfg.AbandonFrom,
		logger:        cfg.Logger,
		topics:        map[string]Topic{},
		byID:          map[ID]string{},
		deleting:      map[string]ID{},
	}
	if c.maxPartitions <= 0 {
		c.maxPartitions = MaxPartitions
	}
	if c.logger == nil {
		c.logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Dir == "" {
		return c, nil
	}
	c.file = newFile(cfg.Dir)
	c.journal = newJournal(cfg.Dir)
	st, upgrade, err := c.file.load()
	if err != nil {
		return nil, err
	}
	fromJournal, cut, err := loadJournal(c.journal.path, st)
	if err != nil {
		return nil, err
	}
	if cut > 0 {
		c.logger.Warn("torn last line cut off the topic journal", "path", c.journal.path, "bytes", cut)
	}
	for _, t := range st.topics {
		c.add(t)
	}
	c.deleting, c.seq = st.deleting, st.seq
	if fromJournal > 0 && !upgrade {
		if err := c.fold(); err != nil {
			return nil, err
		}
	}
	if upgrade {
		for name, t := range c.topics {
			if t.ID == (ID{}) {
				t.ID = c.newID()
				c.topics[name] = t
				c.byID[t.ID] = name
			}
		}
		if err := c.fold(); err != nil {
			return nil, fmt.Errorf("%w: upgrading %s: %w", ErrStorage, c.file.path, err)
		}
		c.logger.Info("topic catalog upgraded to version 2 with topic ids", "path", c.file.path, "topics", len(c.topics))
	}
	return c, nil
}

// add makes t visible. Called with mu held, or before c is shared.
func (c *Catalog) add(t Topic) {
	c.topics[t.Name] = t
	if t.ID != (ID{}) {
		c.byID[t.ID] = t.Name
	}
	c.partitions += int64(t.Partitions)
}

// Check reports whether Create(name, partitions) would be accepted now,
// without creating anything (CreateTopics with ValidateOnly).
func (c *Catalog) Check(name string, partitions int32) error {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.check(name, partitions)
}

// check runs Create's validation. Called with mu held for reading.
func (c *Catalog) check(name string, partitions int32) error {
	if !ValidTopicName(name) {
		return fmt.Errorf("%w: %q", ErrInvalidTopic, name)
	}
	if _, ok := c.topics[name]; ok {
		return fmt.Errorf("%w: %q", ErrTopicExists, name)
	}
	if _, ok := c.deleting[name]; ok {
		return fmt.Errorf("%w: %q is still being deleted", ErrTopicExists, name)
	}
	if partitions < 1 {
		return fmt.Errorf("%w: %d for %q", ErrInvalidPartitions, partitions, name)
	}
	if n := c.partitions + int64(partitions); n > int64(c.maxPartitions) {
		return fmt.Errorf("%w: %d for %q would make %d partitions in all, limit %d", ErrInvalidPartitions, partitions, name, n, c.maxPartitions)
	}
	return nil
}

// Create adds a topic: it validates the name and count, runs
// Config.Prepare, saves the catalog with the topic, and only then makes it
// visible. On any error nothing is visible and the file is unchanged.
func (c *Catalog) Create(name string, partitions int32) (Topic, error) {
	return c.CreateWithConfigs(name, partitions, nil)
}

// CreateWithConfigs is Create of a topic with configs of its own (see
// SetConfigs), saved in the same journal line: Prepare sees them.
func (c *Catalog) CreateWithConfigs(name string, partitions int32, configs map[string]string) (Topic, error) {
	if err := checkConfigs(configs); err != nil {
		return Topic{}, err
	}
	c.create.Lock()
	defer c.create.Unlock()
	c.mu.RLock()
	err := c.check(name, partitions)
	c.mu.RUnlock()
	if err != nil {
		return Topic{}, err
	}
	t := Topic{Name: name, Partitions: partitions, ID: c.newID(), Configs: ownConfigs(configs)}
	if c.prepare != nil {
		if err := c.prepare(t); err != nil {
			return Topic{}, fmt.Errorf("%w: preparing %q: %w", ErrStorage, name, err)
		}
	}
	if c.journal != nil {
		if err := c.journal.append(entry{t: t, seq: c.seq + 1}); err != nil {
			if c.abandon != nil {
				c.abandon(t)
			}
			return Topic{}, fmt.Errorf("%w: %w", ErrStorage, err)
		}
	}
	c.seq++
	c.mu.Lock()
	c.add(t)
	c.mu.Unlock()
	c.maybeFold()
	c.logger.Info("topic created", "topic", name, "partitions", partitions, "topic_id", t.ID.String())
	return t, nil
}

// maybeFold folds the journal once it holds foldEntries lines. Called
// with create held.
func (c *Catalog) maybeFold() {
	if c.journal != nil && c.journal.entries >= foldEntries {
		if err := c.fold(); err != nil {
			c.logger.Warn("topic journal not folded into the catalog; it grows until the next start", "path", c.journal.path, "err", err)
		}
	}
}

// fold writes every topic to FileName and then removes the journal.
// Called with create held, or before c is shared.
func (c *Catalog) fold() error {
	c.mu.RLock()
	all := maps.Clone(c.topics)
	deleting := maps.Clone(c.deleting)
	c.mu.RUnlock()
	if err := c.file.save(all, deleting, c.seq); err != nil {
		return fmt.Errorf("%w: %w", ErrStorage, err)
	}
	if err := c.journal.reset(); err != nil {
		return fmt.Errorf("%w: remove %s: %w", ErrStorage, c.journal.path, err)
	}
	return nil
}

// Close folds the journal into FileName, so that a clean stop leaves one
// file, and closes it.
func (c *Catalog) Close() error {
	c.create.Lock()
	defer c.create.Unlock()
	if c.journal == nil {
		return nil
	}
	if c.journal.entries == 0 {
		c.journal.close()
		return nil
	}
	return c.fold()
}

// newID returns a random topic id that is neither zero nor taken. Called
// with create held or before c is shared; reads byID under mu.
func (c *Catalog) newID() ID {
	for {
		var id ID
		_, _ = rand.Read(id[:]) // crypto/rand.Read never fails
		c.mu.RLock()
		_, taken := c.byID[id]
		c.mu.RUnlock()
		if id != (ID{}) && !taken {
			return id
		}
	}
}

// Partitions returns a topic's partition count; ok is false for an
// unknown topic.
func (c *Catalog) Partitions(name string) (n int32, ok bool) {
	c.mu.RLock()
	t, ok := c.topics[name]
	c.mu.RUnlock()
	return t.Partitions, ok
}

// Lookup returns the topic called name.
func (c *Catalog) Lookup(name string) (Topic, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	t, ok := c.topics[name]
	return t, ok
}

// ByID returns the topic whose id is id.
func (c *Catalog) ByID(id ID) (Topic, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	name, ok := c.byID[id]
	return c.topics[name], ok
}

// List returns every topic, sorted by name.
func (c *Catalog) List() []Topic {
	c.mu.RLock()
	out := make([]Topic, 0, len(c.topics))
	for _, t := range c.topics {
		out = append(out, t)
	}
	c.mu.RUnlock()
	slices.SortFunc(out, func(a, b Topic) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// Counts returns every topic's partition count, by name.
func (c *Catalog) Counts() map[string]int32 {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := make(map[string]int32, len(c.topics))
	for name, t := range c.topics {
		out[name] = t.Partitions
	}
	return out
}

// TotalPartitions returns the partitions of every topic together.
func (c *Catalog) TotalPartitions() int64 {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.partitions
}

// Path returns the catalog file's path, or "" for a memory-only catalog.
func (c *Catalog) Path() string {
	if c.file == nil {
		return ""
	}
	return c.file.path
}

// ValidTopicName reports whether Kafka would accept name as a topic
// (Topic.validate): 1 to 249 characters from [a-zA-Z0-9._-], and neither
// "." nor "..".
func ValidTopicName(name string) bool {
	if name == "" || name == "." || name == ".." || len(name) > maxNameLength {
		return false
	}
	for i := 0; i < len(name); i++ {
		b := name[i]
		if !('a' <= b && b <= 'z' || 'A' <= b && b <= 'Z' || '0' <= b && b <= '9' || b == '.' || b == '_' || b == '-') {
			return false
		}
	}
	return true
}
