package server

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/minibroker/minibroker/catalog"
	"github.com/minibroker/minibroker/coordinator"
	"github.com/minibroker/minibroker/offsets"
	"github.com/minibroker/minibroker/records"
	"github.com/minibroker/minibroker/topics"
	"github.com/minibroker/minibroker/txn"
)

// errorCodes is the only map from errors to Kafka codes, checked in order
// with errors.Is. Anything unmatched is UNKNOWN_SERVER_ERROR.
var errorCodes = [...]struct {
	err  error
	code *kerr.Error
}{
	{coordinator.ErrUnknownMemberID, kerr.UnknownMemberID},
	{coordinator.ErrIllegalGeneration, kerr.IllegalGeneration},
	{coordinator.ErrRebalanceInProgress, kerr.RebalanceInProgress},
	// Kafka's classic protocol has no ownership check. REBALANCE_IN_PROGRESS
	// makes clients re-join (a refresh here) without resetting their
	// generation (docs/design.md section 4; the ownership-code row of docs/behavior-matrix.md).
	{coordinator.ErrNotPartitionOwner, kerr.RebalanceInProgress},
	{coordinator.ErrInvalidGroupID, kerr.InvalidGroupID},
	{coordinator.ErrInvalidMemberID, kerr.InvalidRequest},
	{coordinator.ErrInvalidClientID, kerr.InvalidRequest},
	{coordinator.ErrGroupMaxSizeReached, kerr.GroupMaxSizeReached},
	// Kafka has no limit on a member's metadata; INVALID_REQUEST is not
	// retriable, so a client reports it instead of re-joining for ever.
	{coordinator.ErrMemberMetadataTooLarge, kerr.InvalidRequest},
	// Kafka has no limit on the number of groups, so no code for it.
	// POLICY_VIOLATION ("request parameters do not satisfy the configured
	// policy") is not retriable, so clients report it instead of retrying
	// a request that cannot succeed until the operator raises
	// --max-groups; COORDINATOR_NOT_AVAILABLE would make them retry
	// silently, GROUP_MAX_SIZE_REACHED would blame the group's members.
	{coordinator.ErrTooManyGroups, kerr.PolicyViolation},
	{coordinator.ErrInvalidSessionTimeout, kerr.InvalidSessionTimeout},
	{coordinator.ErrInconsistentGroupProtocol, kerr.InconsistentGroupProtocol},
	{coordinator.ErrMemberIDRequired, kerr.MemberIDRequired},
	{coordinator.ErrUnknownTopic, kerr.UnknownTopicOrPartition},
	// KIP-848 (docs/design.md section 9). A consumer-protocol member's commit
	// outside its current assignment is ErrNotPartitionOwner, above.
	{coordinator.ErrGroupIDNotFound, kerr.GroupIDNotFound},
	// Only operator calls (ForceRebalance) return it; mapped so that every
	// sentinel has a code.
	{coordinator.ErrUnknownGroup, kerr.GroupIDNotFound},
	{coordinator.ErrFencedMemberEpoch, kerr.FencedMemberEpoch},
	{coordinator.ErrStaleMemberEpoch, kerr.StaleMemberEpoch},
	{coordinator.ErrUnsupportedAssignor, kerr.UnsupportedAssignor},
	{coordinator.ErrUnsupportedVersion, kerr.UnsupportedVersion},
	// Static membership (KIP-345; coordinator/static.go) and regex
	// subscriptions (KIP-848).
	{coordinator.ErrFencedInstanceID, kerr.FencedInstanceID},
	{coordinator.ErrUnreleasedInstanceID, kerr.UnreleasedInstanceID},
	{coordinator.ErrInvalidRegularExpression, kerr.InvalidRegularExpression},
	// Records (records.Log), in LogValidator's terms.
	{records.ErrCorruptMessage, kerr.CorruptMessage},
	{records.ErrInvalidRecord, kerr.InvalidRecord},
	{records.ErrMessageTooLarge, kerr.MessageTooLarge},
	{records.ErrUnknownPartition, kerr.UnknownTopicOrPartition},
	// Before catalog.ErrStorage, which wraps it when a create is refused.
	{records.ErrTooManyPartitions, kerr.InvalidPartitions},
	{records.ErrOffsetOutOfRange, kerr.OffsetOutOfRange},
	{records.ErrOutOfOrderSequence, kerr.OutOfOrderSequenceNumber},
	{records.ErrInvalidProducerEpoch, kerr.InvalidProducerEpoch},
	{records.ErrInvalidTxnState, kerr.InvalidTxnState},
	{records.ErrInvalidTimestamp, kerr.InvalidTimestamp},
	{records.ErrUnknownProducerID, kerr.InvalidProducerIDMapping},
	// A transactional batch in a produce that names no transactional id,
	// as Kafka's KafkaApis answers it.
	{records.ErrTransactional, kerr.TransactionalIDAuthorizationFailed},
	// Transactions (package txn). ErrProduceFenced wraps ErrFenced, so it
	// comes first; txnCode answers INVALID_PRODUCER_EPOCH for ErrFenced
	// below v2 of the transaction APIs.
	{txn.ErrProduceFenced, kerr.InvalidProducerEpoch},
	{txn.ErrFenced, kerr.ProducerFenced},
	{txn.ErrInvalidTransactionalID, kerr.InvalidRequest},
	{txn.ErrInvalidTimeout, kerr.InvalidTransactionTimeout},
	{txn.ErrProducerIDMapping, kerr.InvalidProducerIDMapping},
	{txn.ErrInvalidTxnState, kerr.InvalidTxnState},
	{txn.ErrConcurrentTransactions, kerr.ConcurrentTransactions},
	{txn.ErrTooManyTransactionalIDs, kerr.PolicyViolation},
	{txn.ErrTooManyGroups, kerr.PolicyViolation},
	{txn.ErrStorage, kerr.KafkaStorageError},
	{txn.ErrClosed, kerr.CoordinatorNotAvailable},
	{records.ErrStorage, kerr.KafkaStorageError},
	{records.ErrClosed, kerr.NotLeaderForPartition},
	// Only Open returns it; mapped so that every sentinel has a code.
	{records.ErrCorrupt, kerr.KafkaStorageError},
	// DeleteGroups and OffsetDelete (unknown groups are ErrGroupIDNotFound,
	// above).
	{coordinator.ErrNonEmptyGroup, kerr.NonEmptyGroup},
	{coordinator.ErrGroupSubscribedToTopic, kerr.GroupSubscribedToTopic},
	{catalog.ErrInvalidTopic, kerr.InvalidTopicException},
	{catalog.ErrTopicExists, kerr.TopicAlreadyExists},
	{catalog.ErrUnknownTopic, kerr.UnknownTopicOrPartition},
	{catalog.ErrInvalidPartitions, kerr.InvalidPartitions},
	{catalog.ErrStorage, kerr.KafkaStorageError},
	{catalog.ErrInvalidConfigs, kerr.InvalidConfig},
	{topics.ErrInvalidConfig, kerr.InvalidConfig},
	{offsets.ErrNegativeOffset, kerr.OffsetOutOfRange},
	{offsets.ErrMetadataTooLarge, kerr.OffsetMetadataTooLarge},
	{offsets.ErrInvalidEntry, kerr.InvalidRequest},
	{offsets.ErrStorage, kerr.KafkaStorageError},
	{offsets.ErrClosed, kerr.CoordinatorNotAvailable},
	// Only Open returns it; mapped so that every sentinel has a code.
	{offsets.ErrCorrupt, kerr.KafkaStorageError},
}

// code returns the Kafka error code for err: 0 for nil, the first matching
// entry of errorCodes, the code of a wrapped *kerr.Error (a handler's own
// request-level rejection, such as INVALID_REPLICATION_FACTOR), or
// UNKNOWN_SERVER_ERROR (logged at Error, since it is our own failure).
func (s *Server) code(err error) int16 {
	if err == nil {
		return 0
	}
	for _, e := range errorCodes {
		if errors.Is(err, e.err) {
			return e.code.Code
		}
	}
	if ke := (*kerr.Error)(nil); errors.As(err, &ke) {
		return ke.Code
	}
	s.logger.Error("unmapped error", "err", err)
	return kerr.UnknownServerError.Code
}
