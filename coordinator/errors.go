package coordinator

import "errors"

// Sentinel errors, named after the Kafka condition each becomes on the wire
// (server/errors.go is the one place that does the mapping). Match them
// with errors.Is; returned errors wrap them with detail.
var (
	// ErrUnknownMemberID (UNKNOWN_MEMBER_ID): the member is not in the
	// group, or the group does not exist. The chapter collapses the two.
	// A classic request naming a consumer group's member gets it too: the
	// member does not speak the classic protocol.
	ErrUnknownMemberID = errors.New("unknown member id")

	// ErrUnknownGroup: an operator's request (ForceRebalance) names a
	// group the coordinator does not have. No Kafka request returns it.
	ErrUnknownGroup = errors.New("unknown group")

	// ErrIllegalGeneration (ILLEGAL_GENERATION): the request carries a
	// generation other than the group's current one.
	ErrIllegalGeneration = errors.New("illegal generation")

	// ErrRebalanceInProgress (REBALANCE_IN_PROGRESS): the group is not
	// Stable, so it has no assignment to act under.
	ErrRebalanceInProgress = errors.New("rebalance in progress")

	// ErrNotPartitionOwner: a current-generation member committed a
	// partition it is not assigned (the chapter's NotPartitionOwner).
	// Kafka's classic protocol has no such check; on the wire it becomes
	// REBALANCE_IN_PROGRESS (docs/design.md section 4).
	ErrNotPartitionOwner = errors.New("member does not own partition")

	// ErrInvalidGroupID (INVALID_GROUP_ID): the group id is empty where a
	// group id is required, longer than Config.MaxIDBytes, or not text
	// (Coordinator.ValidateGroupID).
	ErrInvalidGroupID = errors.New("invalid group id")

	// ErrInvalidMemberID (INVALID_REQUEST): a chapter-style join named no
	// member, or a member id is longer than Config.MaxIDBytes plus
	// MemberIDSlackBytes, or not text.
	ErrInvalidMemberID = errors.New("invalid member id")

	// ErrInvalidClientID (INVALID_REQUEST): a join's client id, which
	// prefixes new member ids and is kept with the member, is longer than
	// Config.MaxIDBytes or not text.
	ErrInvalidClientID = errors.New("invalid client id")

	// ErrGroupMaxSizeReached (GROUP_MAX_SIZE_REACHED): a join would add a
	// member (or a pending member id) to a group that already holds
	// Config.MaxGroupSize of them (Kafka's group.max.size), or would take
	// the group's protocol metadata and subscriptions past
	// Config.MaxGroupMetadataBytes.
	ErrGroupMaxSizeReached = errors.New("group max size reached")

	// ErrMemberMetadataTooLarge (INVALID_REQUEST): one member's protocol
	// metadata and subscriptions are larger than
	// Config.MaxMemberMetadataBytes. Kafka has no such limit.
	ErrMemberMetadataTooLarge = errors.New("member metadata too large")

	// ErrTooManyGroups (POLICY_VIOLATION): a join or a direct commit would
	// create a group beyond Config.MaxGroups. Kafka has no such limit, so
	// no code of its own; see docs/reliability.md.
	ErrTooManyGroups = errors.New("too many groups")

	// ErrInvalidSessionTimeout (INVALID_SESSION_TIMEOUT): the session
	// timeout is outside the configured bounds.
	ErrInvalidSessionTimeout = errors.New("invalid session timeout")

	// ErrInconsistentGroupProtocol (INCONSISTENT_GROUP_PROTOCOL): the join
	// names no protocol, or none that every member supports, or it is a
	// classic join to a consumer (KIP-848) group that has members.
	ErrInconsistentGroupProtocol = errors.New("inconsistent group protocol")

	// ErrMemberIDRequired (MEMBER_ID_REQUIRED): a JoinGroup v4+ with an
	// empty member id; the result carries the id to join with.
	ErrMemberIDRequired = errors.New("member id required")

	// ErrUnknownTopic (UNKNOWN_TOPIC_OR_PARTITION): a subscription or a
	// direct commit names a topic or partition that does not exist.
	ErrUnknownTopic = errors.New("unknown topic or partition")

	// ErrGroupIDNotFound (GROUP_ID_NOT_FOUND): a DeleteGroups or
	// OffsetDelete names a group with neither state nor committed offsets
	// (Kafka's GroupMetadataManager.group throws GroupIdNotFoundException
	// for it); or a ConsumerGroupHeartbeat names a classic group that has
	// members, as Kafka answers with its consumer-group migration policy
	// off (GroupMetadataManager.getOrMaybeCreateConsumerGroup; its default
	// upgrades the group).
	ErrGroupIDNotFound = errors.New("group id not found")

	// ErrNonEmptyGroup (NON_EMPTY_GROUP): a DeleteGroups names a group
	// that has members, classic or consumer (Kafka's
	// ClassicGroup.validateDeleteGroup and ConsumerGroup
	// .validateDeleteGroup). Pending member ids (KIP-394) are not members.
	ErrNonEmptyGroup = errors.New("non-empty group")

	// ErrGroupSubscribedToTopic (GROUP_SUBSCRIBED_TO_TOPIC): an
	// OffsetDelete names a partition of a topic some member of the group
	// subscribes to; that partition's offset is kept (Kafka's
	// OffsetMetadataManager.deleteOffsets, Group.isSubscribedToTopic).
	ErrGroupSubscribedToTopic = errors.New("group subscribed to topic")

	// ErrFencedMemberEpoch (FENCED_MEMBER_EPOCH): a ConsumerGroupHeartbeat
	// carries an epoch other than the member's current one. Strict:
	// Kafka (GroupMetadataManager.throwIfConsumerGroupMemberEpochIsInvalid)
	// also accepts the previous epoch with a subset of the assignment, in
	// case a response was lost; see docs/behavior-matrix.md.
	ErrFencedMemberEpoch = errors.New("fenced member epoch")

	// ErrStaleMemberEpoch (STALE_MEMBER_EPOCH): an OffsetCommit from a
	// consumer-protocol member carries an epoch other than the member's
	// current one (Kafka up to 4.2, ConsumerGroup.validateOffsetCommit;
	// 4.3's KIP-1251 accepts an older epoch for partitions held since).
	ErrStaleMemberEpoch = errors.New("stale member epoch")

	// ErrUnsupportedAssignor (UNSUPPORTED_ASSIGNOR): a ConsumerGroupHeartbeat
	// asks for a server assignor other than "uniform", "range" or the
	// default.
	ErrUnsupportedAssignor = errors.New("unsupported assignor")

	// ErrUnsupportedVersion (UNSUPPORTED_VERSION): an OffsetCommit before
	// v9, which cannot carry a member epoch, from a consumer-protocol
	// member (Kafka's ConsumerGroup.validateOffsetCommit).
	ErrUnsupportedVersion = errors.New("unsupported version")

	// ErrFencedInstanceID (FENCED_INSTANCE_ID): a request names a group
	// instance id with a member id other than the one that instance holds
	// now: it comes from an incarnation a static member's restart replaced
	// (KIP-345; static.go). Asked before the chapter's checks.
	ErrFencedInstanceID = errors.New("fenced instance id")

	// ErrUnreleasedInstanceID (UNRELEASED_INSTANCE_ID): a
	// ConsumerGroupHeartbeat join names an instance id that a live member
	// of the consumer group still holds (it has not left with epoch -2).
	ErrUnreleasedInstanceID = errors.New("unreleased instance id")

	// ErrInvalidRegularExpression (INVALID_REGULAR_EXPRESSION): a
	// ConsumerGroupHeartbeat subscribes with a regular expression that
	// does not compile (RE2 syntax, as Kafka's).
	ErrInvalidRegularExpression = errors.New("invalid regular expression")
)
