package txn

import "errors"

// Errors of the transaction coordinator, matched with errors.Is. The
// server maps each to Kafka's code (named beside it).
var (
	// ErrInvalidTransactionalID: an empty, over-long or non-text
	// transactional id (INVALID_REQUEST, as Kafka answers an empty one).
	ErrInvalidTransactionalID = errors.New("invalid transactional id")
	// ErrInvalidTimeout: a transaction timeout of zero or less, or over
	// Settings.TransactionMaxTimeout (INVALID_TRANSACTION_TIMEOUT).
	ErrInvalidTimeout = errors.New("invalid transaction timeout")
	// ErrProducerIDMapping: the transactional id is unknown, or holds
	// another producer id (INVALID_PRODUCER_ID_MAPPING).
	ErrProducerIDMapping = errors.New("producer id does not match the transactional id")
	// ErrFenced: the producer's epoch is not the transactional id's
	// current one: a newer producer fenced it (PRODUCER_FENCED, or
	// INVALID_PRODUCER_EPOCH for request versions before it existed).
	ErrFenced = errors.New("producer fenced by a newer epoch")
	// ErrProduceFenced: a transactional produce at an epoch other than the
	// current one (INVALID_PRODUCER_EPOCH, as the partition leader answers
	// in Kafka).
	ErrProduceFenced = errors.New("transactional produce at a stale epoch")
	// ErrInvalidTxnState: the request does not fit the transaction's
	// state, such as EndTxn with no transaction begun, or a produce to a
	// partition not added (INVALID_TXN_STATE).
	ErrInvalidTxnState = errors.New("invalid transaction state")
	// ErrConcurrentTransactions: the transaction is being completed
	// (CONCURRENT_TRANSACTIONS: the client retries).
	ErrConcurrentTransactions = errors.New("transaction is being completed")
	// ErrTooManyTransactionalIDs: a new transactional id beyond
	// Config.MaxTransactionalIDs (POLICY_VIOLATION, as --max-groups).
	ErrTooManyTransactionalIDs = errors.New("too many transactional ids")
	// ErrTooManyGroups: AddOffsetsToTxn beyond MaxGroupsPerTransaction
	// groups in one transaction (POLICY_VIOLATION). Kafka has no limit.
	ErrTooManyGroups = errors.New("too many groups in one transaction")
	// ErrStorage: the transaction log, a marker or the offsets could not
	// be made durable (KAFKA_STORAGE_ERROR).
	ErrStorage = errors.New("transaction storage error")
	// ErrClosed: the coordinator is closed (COORDINATOR_NOT_AVAILABLE).
	ErrClosed = errors.New("transaction coordinator closed")
)
