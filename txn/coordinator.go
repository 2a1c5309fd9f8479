package txn

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/minibroker/minibroker/offsets"
	"github.com/minibroker/minibroker/records"
)

// Clock is the coordinator's only source of time: transaction ages and
// timeouts are measured with it, and only Expire acts on them.
type Clock interface {
	Now() time.Time
}

// Partitions is what the coordinator needs of the partition logs.
// *records.Log implements it.
type Partitions interface {
	// InitProducerID hands out a producer id never handed out before.
	InitProducerID() (int64, int16, error)
	// AppendMarker writes a transaction marker to one partition.
	AppendMarker(topic string, partition int32, m records.Marker) (*records.Pending, error)
	// OpenTransactions lists the transactions the logs hold open.
	OpenTransactions() map[records.TopicPartition][]records.OpenTxn
	// OpenTransaction returns the transaction one partition holds open
	// for a producer.
	OpenTransaction(topic string, partition int32, producerID int64) (records.OpenTxn, bool)
}

// Offsets is what the coordinator needs of the group coordinator, which
// stages transactional offset commits (TxnOffsetCommit).
// *coordinator.Coordinator implements it.
type Offsets interface {
	// TxnStaged returns the offsets producerID staged for group.
	TxnStaged(group string, producerID int64) []offsets.Entry
	// EndTxnOffsets makes entries the group's committed offsets (commit)
	// durably, or discards them (abort), and forgets what producerID
	// staged for group.
	EndTxnOffsets(group string, producerID int64, entries []offsets.Entry, commit bool) error
}

// Config configures a Coordinator. Zero fields mean the default.
type Config struct {
	// Clock is the time source. Required.
	Clock Clock
	// Partitions holds the partition logs. Required.
	Partitions Partitions
	// Offsets stages and applies transactional offset commits. Required.
	Offsets Offsets
	// Dir is where the transaction log lives (JournalFile); "" keeps
	// transactions in memory.
	Dir string
	// Settings are the user settings (settings.go).
	Settings
	// MaxTransactionalIDs caps the transactional ids held: a new one
	// beyond it gets ErrTooManyTransactionalIDs. Kafka has no cap; idle
	// ids expire here as there (Settings.TransactionalIDExpiration), and
	// this bounds what a client inventing ids holds before they do.
	// Default DefaultMaxTransactionalIDs.
	MaxTransactionalIDs int
	// MaxIDBytes bounds a transactional id, as group ids are bounded.
	// Default 255.
	MaxIDBytes int
	// Logger receives one Info event per transaction the broker aborts.
	Logger *slog.Logger

	// syncData, if set, replaces the transaction log's fdatasync: a
	// test's seam that counts or fails syncs.
	syncData func(*os.File) error
}

// Defaults for Config's zero fields.
const (
	DefaultMaxTimeout          = 15 * time.Minute
	DefaultMaxTransactionalIDs = 100_000
	// MaxGroupsPerTransaction bounds the groups one transaction may add
	// (AddOffsetsToTxn), so that a producer cannot grow one without bound.
	MaxGroupsPerTransaction = 1000
	defaultMaxIDBytes       = 255
)

// Coordinator is the transaction coordinator of a single broker (Kafka's
// TransactionCoordinator with its TransactionStateManager). Every state
// change happens under one mutex; durable writes of a transaction's end
// (journal, markers, offsets) happen outside it while the transaction's
// Prepare state keeps other requests for it out (CONCURRENT_TRANSACTIONS).
type Coordinator struct {
	cfg     Config
	journal *journal

	mu     sync.Mutex
	txns   map[string]*txn
	byPID  map[int64]*txn
	closed bool
	stats  Stats
	// rewrites tracks the log rewrite the expiry step started
	// (startCompaction); Close waits for it.
	rewrites sync.WaitGroup
	// active holds every id that may be Ongoing or in a Prepare state
	// (it gains one as its transaction begins; the expiry step drops the
	// others), so that the step's timeouts and retries do not walk every
	// id; the idle ids are walked once per idleScanEvery (nextIdleScan).
	active       map[*txn]struct{}
	nextIdleScan time.Time
	// recovering is set while New replays the log, before the
	// coordinator is shared.
	recovering bool
}

// Stats counts transactions since the coordinator was opened.
type Stats struct {
	Open      int   // transactions Ongoing now
	Committed int64 // transactions committed
	Aborted   int64 // transactions aborted, for any reason
	TimedOut  int64 // of those, aborted by the expiry step
	// Expired counts the transactional ids forgotten for being idle
	// (Settings.TransactionalIDExpiration).
	Expired int64
	// LogSyncs counts the transaction log's fdatasyncs (a group commit
	// of concurrent writers is one, and so is a rewrite's).
	LogSyncs int64
	// LogRewrites counts the rewrites of the transaction log (compact.go).
	LogRewrites int64
}

// New opens the coordinator: it replays the transaction log, completes
// every transaction whose decision is durable, and aborts (bumping the
// producer's epoch) every transaction that was open, so that none is left
// half visible. Open transactions the partition logs hold for producers
// the log does not know get abort markers too.
func New(cfg Config) (*Coordinator, error) {
	if cfg.Clock == nil || cfg.Partitions == nil || cfg.Offsets == nil {
		return nil, errors.New("txn: Config.Clock, Partitions and Offsets are required")
	}
	if err := cfg.Settings.Validate(); err != nil {
		return nil, err
	}
	if cfg.MaxTransactionalIDs < 0 || cfg.MaxIDBytes < 0 {
		return nil, errors.New("txn: limits must not be negative")
	}
	cfg.Settings = cfg.Settings.WithDefaults()
	if cfg.MaxTransactionalIDs == 0 {
		cfg.MaxTransactionalIDs = DefaultMaxTransactionalIDs
	}
	if cfg.MaxIDBytes == 0 {
		cfg.MaxIDBytes = defaultMaxIDBytes
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	j, entries, err := openJournal(cfg.Dir, cfg.Logger)
	if err != nil {
		return nil, err
	}
	if cfg.syncData != nil {
		j.sync = cfg.syncData
	}
	c := &Coordinator{cfg: cfg, journal: j, txns: map[string]*txn{}, byPID: map[int64]*txn{}, active: map[*txn]struct{}{}}
	if err := c.recover(entries); err != nil {
		_ = j.close()
		return nil, err
	}
	return c, nil
}

// Close waits for a rewrite of the log in progress, then closes the log.
func (c *Coordinator) Close() error {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	c.rewrites.Wait()
	return c.journal.close()
}

// startCompaction starts a rewrite of the transaction log in the
// background if one pays (compact.go): other requests go on while it
// runs, and their records reach the new file. A failed rewrite is logged,
// and tried again only once the log has grown by garbageRatio again.
func (c *Coordinator) startCompaction() {
	if !c.journal.shouldCompact() {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	c.rewrites.Add(1)
	go func() {
		defer c.rewrites.Done()
		if _, err := c.journal.compact(); err != nil {
			c.journal.postpone()
			c.cfg.Logger.Error("transaction log not rewritten", "err", err)
		}
	}()
}

// checkID applies the group id rules to a transactional id, and Kafka's
// own: it must not be empty.
func (c *Coordinator) checkID(id string) error {
	switch {
	case id == "":
		return fmt.Errorf("%w: empty", ErrInvalidTransactionalID)
	case len(id) > c.cfg.MaxIDBytes:
		return fmt.Errorf("%w: %d bytes, limit %d", ErrInvalidTransactionalID, len(id), c.cfg.MaxIDBytes)
	case !utf8.ValidString(id):
		return fmt.Errorf("%w: %q is not UTF-8", ErrInvalidTransactionalID, id)
	}
	for _, r := range id {
		if unicode.IsControl(r) {
			return fmt.Errorf("%w: %q holds a control character", ErrInvalidTransactionalID, id)
		}
	}
	return nil
}

// InitProducerID answers InitProducerId with a transactional id (Kafka's
// handleInitProducerId): a new id gets a new producer id at epoch 0; a
// known one keeps its producer id at epoch + 1 (a new producer id once
// the epoch is exhausted), which fences every older epoch. An open
// transaction is aborted first, at a bumped epoch, so the answer is then
// epoch + 2. With expectPID >= 0 (KIP-360) the caller names the producer
// id and epoch it holds, and Kafka's rules apply
// (TransactionMetadata.prepareIncrementProducerEpoch): the current epoch
// is bumped; the last one, which only a bump asked for with the current
// epoch (or one the broker made) leaves, is a retry of that bump and gets
// the current epoch unbumped; any other, such as the epoch a new
// instance's InitProducerId replaced (that bump names no epoch and
// forgets the last one), is ErrFenced, so a zombie cannot fence the
// instance that replaced it. The answer is given once the new epoch is
// durable.
func (c *Coordinator) InitProducerID(id string, timeout time.Duration, expectPID int64, expectEpoch int16) (int64, int16, error) {
	if err := c.checkID(id); err != nil {
		return -1, -1, err
	}
	if timeout <= 0 || timeout > c.cfg.TransactionMaxTimeout {
		return -1, -1, fmt.Errorf("%w: %v, must be in (0, %v]", ErrInvalidTimeout, timeout, c.cfg.TransactionMaxTimeout)
	}
	for {
		c.mu.Lock()
		if c.closed {
			c.mu.Unlock()
			return -1, -1, ErrClosed
		}
		t := c.txns[id]
		if t == nil {
			defer c.mu.Unlock()
			return c.initNew(id, timeout)
		}
		if expectPID >= 0 && (expectPID != t.pid || expectEpoch != t.epoch && (expectEpoch != t.lastEpoch || t.lastEpoch < 0)) {
			c.mu.Unlock()
			return -1, -1, fmt.Errorf("%w: producer %d epoch %d, transactional id %q holds producer %d epoch %d (last %d)",
				ErrFenced, expectPID, expectEpoch, id, t.pid, t.epoch, t.lastEpoch)
		}
		switch {
		case t.busy || t.state == PrepareCommit || t.state == PrepareAbort:
			c.mu.Unlock()
			return -1, -1, fmt.Errorf("%w: %q is %s", ErrConcurrentTransactions, id, t.state)
		case t.state == Ongoing:
			d := c.abortLocked(t)
			c.mu.Unlock()
			c.cfg.Logger.Info("transaction aborted: a new producer initialized its transactional id", "transactional_id", id, "producer_id", t.pid, "epoch", d.Epoch)
			if err := c.finish(t, d, true); err != nil {
				return -1, -1, err
			}
			// The abort's bump answers for the epoch the caller named: what
			// follows is a bump from the epoch the abort made, unless
			// another producer took the id in between.
			expectEpoch = d.Epoch
			continue
		}
		defer c.mu.Unlock()
		switch {
		case expectPID < 0:
			return c.bumpLocked(t, timeout, -1)
		case expectEpoch == t.epoch:
			return c.bumpLocked(t, timeout, t.epoch)
		default: // the last epoch: a retry of the bump that replaced it
			return c.renewLocked(t, timeout)
		}
	}
}

// initNew hands out a producer id to a new transactional id. Called with
// mu held.
func (c *Coordinator) initNew(id string, timeout time.Duration) (int64, int16, error) {
	if len(c.txns) >= c.cfg.MaxTransactionalIDs {
		return -1, -1, fmt.Errorf("%w: %d held", ErrTooManyTransactionalIDs, len(c.txns))
	}
	pid, _, err := c.cfg.Partitions.InitProducerID()
	if err != nil {
		return -1, -1, fmt.Errorf("%w: %w", ErrStorage, err)
	}
	now := c.cfg.Clock.Now()
	e := entry{Kind: kindInit, ID: id, PID: pid, Epoch: 0, LastEpoch: -1, TimeoutMs: timeout.Milliseconds(), At: now.UnixMilli()}
	if err := c.journal.append(e); err != nil {
		return -1, -1, err
	}
	t := &txn{id: id, pid: pid, epoch: 0, lastEpoch: -1, timeout: timeout, state: Empty, updated: now}
	c.txns[id], c.byPID[pid] = t, t
	return pid, 0, nil
}

// bumpLocked gives a known transactional id its next epoch, remembering
// last as the epoch a retry may name (-1: none). Called with mu held.
func (c *Coordinator) bumpLocked(t *txn, timeout time.Duration, last int16) (int64, int16, error) {
	pid, epoch := t.pid, t.epoch+1
	if t.epoch >= math.MaxInt16-1 { // Kafka's isProducerEpochExhausted
		var err error
		if pid, _, err = c.cfg.Partitions.InitProducerID(); err != nil {
			return -1, -1, fmt.Errorf("%w: %w", ErrStorage, err)
		}
		epoch, last = 0, -1
	}
	return c.setEpochLocked(t, pid, epoch, last, timeout)
}

// renewLocked answers a retried bump: the id keeps its producer id,
// epoch and last epoch, with the timeout asked for now. Called with mu
// held.
func (c *Coordinator) renewLocked(t *txn, timeout time.Duration) (int64, int16, error) {
	return c.setEpochLocked(t, t.pid, t.epoch, t.lastEpoch, timeout)
}

// setEpochLocked logs and applies an id's producer id, epoch, last epoch
// and timeout; the id is then Empty. Called with mu held.
func (c *Coordinator) setEpochLocked(t *txn, pid int64, epoch, last int16, timeout time.Duration) (int64, int16, error) {
	now := c.cfg.Clock.Now()
	e := entry{Kind: kindInit, ID: t.id, PID: pid, Epoch: epoch, LastEpoch: last, TimeoutMs: timeout.Milliseconds(), At: now.UnixMilli()}
	if err := c.journal.append(e); err != nil {
		return -1, -1, err
	}
	if pid != t.pid {
		delete(c.byPID, t.pid)
		c.byPID[pid] = t
	}
	t.pid, t.epoch, t.lastEpoch, t.timeout = pid, epoch, last, timeout
	t.state, t.updated = Empty, now
	t.reset()
	return pid, epoch, nil
}

// lookupLocked finds the transaction a request names and checks its
// producer id and epoch. Called with mu held.
func (c *Coordinator) lookupLocked(id string, pid int64, epoch int16) (*txn, error) {
	if c.closed {
		return nil, ErrClosed
	}
	t := c.txns[id]
	if t == nil {
		return nil, fmt.Errorf("%w: unknown transactional id %q", ErrProducerIDMapping, id)
	}
	if t.pid != pid {
		return nil, fmt.Errorf("%w: %q holds producer %d, not %d", ErrProducerIDMapping, id, t.pid, pid)
	}
	if t.fenced(epoch) {
		return nil, fmt.Errorf("%w: epoch %d, %q is at epoch %d", ErrFenced, epoch, id, t.epoch)
	}
	return t, nil
}

// beginLocked moves a transaction to Ongoing, logging the begin when it
// starts now. Called with mu held.
func (c *Coordinator) beginLocked(t *txn) error {
	switch t.state {
	case PrepareCommit, PrepareAbort:
		return fmt.Errorf("%w: %q is %s", ErrConcurrentTransactions, t.id, t.state)
	case Ongoing:
		return nil
	}
	if t.busy {
		return fmt.Errorf("%w: %q is completing", ErrConcurrentTransactions, t.id)
	}
	// Not synced: a begin lost in a crash is repaired by the restart,
	// which aborts whatever the partition logs hold open for the producer.
	now := c.cfg.Clock.Now()
	if err := c.journal.write(entry{Kind: kindBegin, ID: t.id, PID: t.pid, Epoch: t.epoch, At: now.UnixMilli()}); err != nil {
		return err
	}
	t.state, t.started, t.updated = Ongoing, now, now
	c.active[t] = struct{}{}
	t.reset()
	t.parts, t.groups = map[records.TopicPartition]struct{}{}, map[string]struct{}{}
	return nil
}

// AddPartitions adds partitions to the producer's transaction, beginning
// it if none is open (AddPartitionsToTxn). The caller has checked that
// every partition exists.
func (c *Coordinator) AddPartitions(id string, pid int64, epoch int16, parts []records.TopicPartition) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	t, err := c.lookupLocked(id, pid, epoch)
	if err != nil {
		return err
	}
	if err := c.beginLocked(t); err != nil {
		return err
	}
	for _, tp := range parts {
		t.parts[tp] = struct{}{}
	}
	t.updated = c.cfg.Clock.Now()
	return nil
}

// AddOffsets adds a group to the producer's transaction, beginning it if
// none is open (AddOffsetsToTxn): its TxnOffsetCommits are then accepted.
func (c *Coordinator) AddOffsets(id string, pid int64, epoch int16, group string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	t, err := c.lookupLocked(id, pid, epoch)
	if err != nil {
		return err
	}
	if _, ok := t.groups[group]; !ok && t.state == Ongoing && len(t.groups) >= MaxGroupsPerTransaction {
		return fmt.Errorf("%w: %d already", ErrTooManyGroups, len(t.groups))
	}
	if err := c.beginLocked(t); err != nil {
		return err
	}
	t.groups[group] = struct{}{}
	t.updated = c.cfg.Clock.Now()
	return nil
}

// StageOffsets runs stage, the group coordinator's validation and staging
// of a TxnOffsetCommit, once the producer is known to hold an Ongoing
// transaction that added group; under the lock, so the transaction cannot
// end between the check and the staging.
func (c *Coordinator) StageOffsets(id string, pid int64, epoch int16, group string, stage func() error) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	t, err := c.lookupLocked(id, pid, epoch)
	if err != nil {
		return err
	}
	if _, ok := t.groups[group]; !ok || t.state != Ongoing {
		return fmt.Errorf("%w: group %q was not added to the transaction of %q (%s)", ErrInvalidTxnState, group, id, t.state)
	}
	return stage()
}

// Produce runs write, the append of a transactional batch to tp, once the
// batch's producer is known to hold an Ongoing transaction that added tp;
// under the lock, so that no marker can be written between the check and
// the append. A stale epoch is ErrProduceFenced, a partition not added
// ErrInvalidTxnState.
func (c *Coordinator) Produce(id string, pid int64, epoch int16, tp records.TopicPartition, write func() error) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	t, err := c.lookupLocked(id, pid, epoch)
	if errors.Is(err, ErrFenced) {
		return fmt.Errorf("%w: %w", ErrProduceFenced, err)
	}
	if err != nil {
		return err
	}
	if _, ok := t.parts[tp]; !ok || t.state != Ongoing {
		return fmt.Errorf("%w: partition %s is not in the transaction of %q (%s)", ErrInvalidTxnState, tp, id, t.state)
	}
	return write()
}
