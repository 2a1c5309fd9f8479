package txn

import (
	"time"

	"github.com/minibroker/minibroker/records"
)

// State is a transactional id's state, Kafka's TransactionState.
type State int

const (
	// Empty: no transaction since the producer id was handed out.
	Empty State = iota
	// Ongoing: a transaction has begun (a partition or group was added).
	Ongoing
	// PrepareCommit and PrepareAbort: the decision is durable and its
	// markers and offsets are being written.
	PrepareCommit
	PrepareAbort
	// CompleteCommit and CompleteAbort: the last transaction ended.
	CompleteCommit
	CompleteAbort
)

var stateNames = [...]string{"Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit", "CompleteAbort"}

// String is Kafka's name for the state (DescribeTransactions).
func (s State) String() string {
	if int(s) < len(stateNames) {
		return stateNames[s]
	}
	return "Unknown"
}

// txn is one transactional id's metadata (Kafka's TransactionMetadata).
// Guarded by the Coordinator's mu.
type txn struct {
	id        string
	pid       int64
	epoch     int16
	lastEpoch int16 // the epoch before the last bump the broker made; -1 if none
	timeout   time.Duration
	state     State
	started   time.Time // when the current transaction began
	updated   time.Time
	parts     map[records.TopicPartition]struct{}
	groups    map[string]struct{}
	// decision is what completing a Prepare state writes, kept so that a
	// completion that failed can be retried.
	decision *entry
	busy     bool // a completion is running outside the lock
	// applied: the decision's offsets were applied (or discarded), so a
	// retry of its completion does not apply them again.
	applied bool
	// failures counts the completions of the decision that failed in a
	// row; the expiry step retries it from retryAt on.
	failures int
	retryAt  time.Time
}

func (t *txn) reset() {
	t.parts, t.groups, t.decision, t.applied = nil, nil, nil, false
	t.failures, t.retryAt = 0, time.Time{}
}

// expirable reports whether the id may expire (Kafka's
// TransactionState.isExpirationAllowed): no transaction open or being
// completed.
func (t *txn) expirable() bool {
	return !t.busy && (t.state == Empty || t.state == CompleteCommit || t.state == CompleteAbort)
}

// fenced reports whether epoch is not the id's current epoch.
func (t *txn) fenced(epoch int16) bool { return epoch != t.epoch }
