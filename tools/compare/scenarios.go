package compare

import (
	"context"
	"regexp"
	"time"
)

// Side names the broker a scenario runs against.
type Side string

// The two sides of every comparison.
const (
	Minibroker Side = "minibroker"
	Kfake      Side = "kfake"
)

// Sides lists both sides, minibroker first.
func Sides() []Side { return []Side{Minibroker, Kfake} }

// Scenario is one scripted situation, run the same way against both
// brokers.
type Scenario struct {
	// Name is short, unique and kebab-case; tests use it as a subtest name.
	Name string
	// Row is the id of the docs/behavior-matrix.md row that explains the
	// answers.
	Row string
	// Run plays the scenario and returns the answer it observed.
	Run func(ctx context.Context, s *Script) (string, error)
	// Minibroker and Kfake are the answers each side is documented to give.
	Minibroker, Kfake string
	// Records marks a scenario that produces records to a topic of its
	// own, which Prepare creates before any scenario runs.
	Records bool
	// Topics are more topics of the scenario's own, by suffix: Prepare
	// creates each, named like the group and "-" and the suffix, with its
	// partitions.
	Topics map[string]int32
	// Timeout bounds the scenario on one side, scenarioTimeout if zero.
	Timeout time.Duration
	// Pattern marks documented answers that are regular expressions, for
	// an answer that holds a count that varies from run to run.
	Pattern bool
	// Alone marks a scenario that runs once every other has finished:
	// its load (a dozen kgo clients) would slow the scenarios that wait
	// on a session beside it.
	Alone bool
}

// Want returns the answer side is documented to give.
func (sc Scenario) Want(side Side) string {
	if side == Kfake {
		return sc.Kfake
	}
	return sc.Minibroker
}

// Matches reports whether answer is the one side is documented to give:
// equal to it, or for a Pattern scenario matched by it.
func (sc Scenario) Matches(side Side, answer string) bool {
	if sc.Pattern {
		ok, err := regexp.MatchString(sc.Want(side), answer)
		return err == nil && ok
	}
	return answer == sc.Want(side)
}

// sessionExpiryTimeout is the session of the session-expiry scenario and
// of the members the record scenarios let expire: long enough that the
// member is certainly still there when the script first looks (and
// between its join and its sync, on a machine busy with other tests),
// short enough to keep the comparison fast.
const sessionExpiryTimeout = time.Second

// Scenarios returns every scenario, in the order the table prints them.
func Scenarios() []Scenario {
	return []Scenario{
		{
			Name: "stale-generation-commit", Row: "commit-generation", Run: staleGenerationCommit,
			Minibroker: "ILLEGAL_GENERATION, not stored; after refresh NONE",
			Kfake:      "ILLEGAL_GENERATION, not stored; after refresh NONE",
		},
		{
			Name: "ownership-violation", Row: "commit-ownership", Run: ownershipViolation,
			Minibroker: "REBALANCE_IN_PROGRESS, not stored",
			Kfake:      "NONE, stored",
		},
		{
			Name: "commit-unknown-member", Row: "commit-unknown-member", Run: commitUnknownMember,
			Minibroker: "UNKNOWN_MEMBER_ID, not stored",
			Kfake:      "UNKNOWN_MEMBER_ID, not stored",
		},
		{
			Name: "commit-unknown-partition", Row: "commit-unknown-partition", Run: commitUnknownPartition,
			Minibroker: "REBALANCE_IN_PROGRESS",
			Kfake:      "UNKNOWN_TOPIC_OR_PARTITION",
		},
		{
			Name: "stale-heartbeat", Row: "heartbeat-generation", Run: staleHeartbeat,
			Minibroker: "ILLEGAL_GENERATION",
			Kfake:      "ILLEGAL_GENERATION",
		},
		{
			Name: "heartbeat-while-another-joins", Row: "no-join-barrier", Run: heartbeatWhileAnotherJoins,
			Minibroker: "ILLEGAL_GENERATION",
			Kfake:      "REBALANCE_IN_PROGRESS",
		},
		{
			Name: "heartbeat-unknown-member", Row: "heartbeat-unknown-member", Run: heartbeatUnknownMember,
			Minibroker: "UNKNOWN_MEMBER_ID",
			Kfake:      "UNKNOWN_MEMBER_ID",
		},
		{
			Name: "heartbeat-check-order", Row: "heartbeat-check-order", Run: heartbeatCheckOrder,
			Minibroker: "ILLEGAL_GENERATION",
			Kfake:      "UNKNOWN_MEMBER_ID",
		},
		{
			Name: "sync-wrong-protocol", Row: "sync-group", Run: syncWrongProtocol,
			Minibroker: "INCONSISTENT_GROUP_PROTOCOL",
			Kfake:      "INCONSISTENT_GROUP_PROTOCOL",
		},
		{
			Name: "leave-unknown-member", Row: "leave-unknown-member", Run: leaveUnknownMember,
			Minibroker: "NONE",
			Kfake:      "UNKNOWN_MEMBER_ID",
		},
		{
			Name: "direct-commit-with-members", Row: "direct-commit", Run: directCommitWithMembers,
			Minibroker: "NONE, stored",
			Kfake:      "UNKNOWN_MEMBER_ID, not stored",
		},
		{
			Name: "direct-commit-empty-group", Row: "direct-commit", Run: directCommitEmptyGroup,
			Minibroker: "NONE, stored",
			Kfake:      "NONE, stored",
		},
		{
			Name: "commit-empty-group", Row: "commit-not-stable", Run: commitEmptyGroup,
			Minibroker: "REBALANCE_IN_PROGRESS, not stored",
			Kfake:      "ILLEGAL_GENERATION, not stored",
		},
		{
			Name: "unknown-group", Row: "unknown-group", Run: unknownGroup,
			Minibroker: "heartbeat UNKNOWN_MEMBER_ID, commit UNKNOWN_MEMBER_ID, fetch -1",
			Kfake:      "heartbeat GROUP_ID_NOT_FOUND, commit ILLEGAL_GENERATION, fetch GROUP_ID_NOT_FOUND",
		},
		{
			Name: "member-id-required", Row: "member-id-required", Run: memberIDRequired,
			Minibroker: "MEMBER_ID_REQUIRED, then NONE at generation 1",
			Kfake:      "MEMBER_ID_REQUIRED, then NONE at generation 1",
		},
		{
			Name: "join-unknown-member-id", Row: "join-unknown-member", Run: joinUnknownMemberID,
			Minibroker: "UNKNOWN_MEMBER_ID",
			Kfake:      "UNKNOWN_MEMBER_ID",
		},
		{
			Name: "static-member", Row: "static-membership", Run: staticMember,
			Minibroker: "NONE",
			Kfake:      "NONE",
		},
		{
			Name: "static-restart", Row: "static-membership", Run: staticRestart,
			Minibroker: "generation +0, same assignment true, new member id true",
			Kfake:      "generation +0, same assignment true, new member id true",
		},
		{
			Name: "static-zombie", Row: "static-fencing-order", Run: staticZombie,
			Minibroker: "heartbeat FENCED_INSTANCE_ID, commit FENCED_INSTANCE_ID; without the instance id at an older generation ILLEGAL_GENERATION",
			Kfake:      "heartbeat FENCED_INSTANCE_ID, commit FENCED_INSTANCE_ID; without the instance id at an older generation UNKNOWN_MEMBER_ID",
		},
		{
			Name: "static-restart-new-subscription", Row: "static-restart-subscription", Run: staticRestartNewSubscription,
			Minibroker: "generation +1, assigned orders-0,orders-1,orders-2,orders-3,payments-0",
			Kfake:      "generation +1, assigned orders-0,orders-1,orders-2,orders-3,payments-0",
		},
		{
			Name: "static-leave-unknown-instance", Row: "static-leave", Run: staticLeaveUnknownInstance,
			Minibroker: "NONE, member NONE",
			Kfake:      "NONE, member UNKNOWN_MEMBER_ID",
		},
		{
			Name: "unchanged-rejoin", Row: "refresh-rejoin", Run: unchangedRejoin,
			Minibroker: "NONE, generation +0, same assignment",
			Kfake:      "NONE, generation +0, same assignment",
		},
		{
			Name: "unchanged-rejoin-leader", Row: "refresh-rejoin-leader", Run: unchangedRejoinLeader,
			Minibroker: "NONE, generation +0",
			Kfake:      "NONE, generation +1",
		},
		{
			Name: "changed-rejoin", Row: "changed-rejoin", Run: changedRejoin,
			Minibroker: "NONE, generation +1",
			Kfake:      "NONE, generation +1",
		},
		{
			Name: "unknown-topic-subscription", Row: "subscription-topics", Run: unknownTopicSubscription,
			Minibroker: "UNKNOWN_TOPIC_OR_PARTITION",
			Kfake:      "NONE",
		},
		{
			Name: "invalid-session-timeout", Row: "join-validation", Run: invalidSessionTimeout,
			Minibroker: "INVALID_SESSION_TIMEOUT",
			Kfake:      "INVALID_SESSION_TIMEOUT",
		},
		{
			Name: "session-expiry", Row: "session-expiry", Run: sessionExpiry,
			Minibroker: "Stable, then Empty after the session timeout",
			Kfake:      "Stable, then Empty after the session timeout",
		},
		{
			Name: "leader-plan-ignored", Row: "assignment-coordinator", Run: leaderPlanIgnored,
			Minibroker: "leader 2 partitions, other member 2",
			Kfake:      "leader 4 partitions, other member 0",
		},
		{
			Name: "commit-does-not-extend-session", Row: "commit-session", Run: commitDoesNotExtendSession,
			Minibroker: "Empty after 1.5s of commits and no heartbeat",
			Kfake:      "Stable after 1.5s of commits and no heartbeat",
		},
		{
			Name: "group-states", Row: "describe-list-groups", Run: groupStates,
			Minibroker: "Stable (listed Stable); after leave Empty; unknown group Dead",
			Kfake:      "Stable (listed Stable); after leave Empty; unknown group Dead",
		},
		{
			Name: "find-coordinator-and-metadata", Row: "wire-metadata-coordinator", Run: findCoordinator,
			Minibroker: "NONE, coordinator here; orders: 4 partitions, 4 led here",
			Kfake:      "NONE, coordinator here; orders: 4 partitions, 4 led here",
		},
		{
			Name: "list-offsets-and-fetch", Row: "wire-fetch-empty", Run: listOffsetsAndFetch,
			Minibroker: "offsets 0..0; Fetch NONE, high watermark 0, no records",
			Kfake:      "offsets 0..0; Fetch NONE, high watermark 0, no records",
		},
		{
			Name: "produce-fetch", Row: "records-produce-fetch", Run: produceFetch,
			Minibroker: "offsets 0..10; from 0: 0-9 (payment-0..payment-9), high watermark 10; from 6: 6-9 (payment-6..payment-9), high watermark 10, 6 earlier records of the batch dropped",
			Kfake:      "offsets 0..10; from 0: 0-9 (payment-0..payment-9), high watermark 10; from 6: 6-9 (payment-6..payment-9), high watermark 10, 6 earlier records of the batch dropped",
			Records:    true,
		},
		{
			Name: "commit-replay", Row: "replay-at-least-once", Run: commitAndReplay,
			Minibroker: "B starts at 6 and gets 6-9 again, the same bytes",
			Kfake:      "B starts at 6 and gets 6-9 again, the same bytes",
			Records:    true,
		},
		{
			Name: "zombie-commit", Row: "zombie-commit", Run: zombieCommit,
			Minibroker: "zombie's commit of 8 ILLEGAL_GENERATION; committed 10",
			Kfake:      "zombie's commit of 8 UNKNOWN_MEMBER_ID; committed 10",
			Records:    true,
		},
		{
			Name: "direct-commit-backwards", Row: "direct-commit-backwards", Run: directCommitBackwards,
			Minibroker: "over 10, with a member: NONE, committed 8; into the Empty group: NONE, committed 8",
			Kfake:      "over 10, with a member: UNKNOWN_MEMBER_ID, committed 10; into the Empty group: NONE, committed 8",
			Records:    true,
		},
		{
			Name: "txn-init-fences", Row: "txn-fenced-code", Run: txnInitFences,
			Minibroker: "epoch +1, same producer id true; the old epoch's AddPartitionsToTxn v3 PRODUCER_FENCED, v1 INVALID_PRODUCER_EPOCH",
			Kfake:      "epoch +1, same producer id true; the old epoch's AddPartitionsToTxn v3 PRODUCER_FENCED, v1 PRODUCER_FENCED",
			Records:    true,
		},
		{
			Name: "txn-end-not-begun", Row: "txn-end", Run: txnEndNotBegun,
			Minibroker: "commit INVALID_TXN_STATE, abort INVALID_TXN_STATE",
			Kfake:      "commit INVALID_TXN_STATE, abort NONE",
		},
		{
			Name: "txn-produce-not-added", Row: "txn-produce-not-added", Run: txnProduceNotAdded,
			Minibroker: "INVALID_TXN_STATE, log end 0",
			Kfake:      "INVALID_TXN_STATE, log end 0",
			Records:    true,
		},
		{
			Name: "txn-offset-commit-stale-generation", Row: "txn-offset-commit-fence", Run: txnOffsetCommitStaleGeneration,
			Minibroker: "ILLEGAL_GENERATION; at the current generation NONE",
			Kfake:      "ILLEGAL_GENERATION; at the current generation NONE",
		},
		{
			Name: "txn-require-stable", Row: "txn-require-stable", Run: txnRequireStable,
			Minibroker: "orders-0 UNSTABLE_OFFSET_COMMIT -1, orders-1 NONE 7",
			Kfake:      "orders-0 UNSTABLE_OFFSET_COMMIT -1, orders-1 UNSTABLE_OFFSET_COMMIT -1",
		},
		{
			Name: "txn-pid-mapping", Row: "txn-pid-mapping", Run: txnPIDMapping,
			Minibroker: "INVALID_PRODUCER_ID_MAPPING",
			Kfake:      "NONE",
			Records:    true,
		},
		{
			Name: "txn-add-unknown-partition", Row: "txn-add-partitions", Run: txnAddUnknownPartition,
			Minibroker: "0 OPERATION_NOT_ATTEMPTED, 99 UNKNOWN_TOPIC_OR_PARTITION; EndTxn commit INVALID_TXN_STATE",
			Kfake:      "0 OPERATION_NOT_ATTEMPTED, 99 UNKNOWN_TOPIC_OR_PARTITION; EndTxn commit INVALID_TXN_STATE",
			Records:    true,
		},
		{
			Name: "txn-offset-commit-not-added", Row: "txn-offset-commit-group-added", Run: txnOffsetCommitNotAdded,
			Minibroker: "TxnOffsetCommit INVALID_TXN_STATE",
			Kfake:      "TxnOffsetCommit INVALID_TXN_STATE",
			Records:    true,
		},
		{
			Name: "txn-describe-list", Row: "txn-list", Run: txnDescribeList,
			Minibroker: "describe NONE Ongoing, 1 partition, pid matches true; unknown id TRANSACTIONAL_ID_NOT_FOUND; list NONE [it Ongoing], unknown states [Sleeping]",
			Kfake:      "describe NONE Ongoing, 1 partition, pid matches true; unknown id TRANSACTIONAL_ID_NOT_FOUND; list NONE [it Ongoing], unknown states []",
			Records:    true,
		},
		{
			Name: "txn-init-aborts-open", Row: "txn-init-aborts-open", Run: txnInitAbortsOpen,
			Minibroker: "epoch +2, same producer id true; log 0, 1 abort, the marker at epoch +1; read_committed aborted its from 0, last stable 2",
			Kfake:      "epoch +1, same producer id true; log 0, 1 abort, the marker at epoch +0; read_committed aborted its from 0, last stable 2",
			Records:    true,
		},
		{
			Name: "txn-concurrent", Row: "txn-concurrent", Run: txnConcurrent,
			Minibroker: "after EndTxn commit: AddPartitionsToTxn NONE, EndTxn abort NONE, InitProducerId NONE epoch +1; log 0, 1 commit, 2 abort",
			Kfake:      "after EndTxn commit: AddPartitionsToTxn NONE, EndTxn abort NONE, InitProducerId NONE epoch +1; log 0, 1 commit, 2 abort",
			Records:    true,
		},
		{
			Name: "txn-timeout", Row: "txn-timeout", Run: txnTimeout,
			Minibroker: "log 0 abort at epoch +1; EndTxn commit PRODUCER_FENCED; InitProducerId from that epoch NONE epoch +1",
			Kfake:      "log 0 abort at epoch +1; EndTxn commit PRODUCER_FENCED; InitProducerId from that epoch NONE epoch +2",
			Records:    true,
		},
		{
			Name: "txn-timeout-max", Row: "txn-timeout-max", Run: txnTimeoutMax,
			Minibroker: "0 INVALID_TRANSACTION_TIMEOUT, -1 INVALID_TRANSACTION_TIMEOUT, 900000 NONE, 900001 INVALID_TRANSACTION_TIMEOUT",
			Kfake:      "0 INVALID_TRANSACTION_TIMEOUT, -1 INVALID_TRANSACTION_TIMEOUT, 900000 NONE, 900001 INVALID_TRANSACTION_TIMEOUT",
		},
		{
			Name: "txn-produce-no-id", Row: "txn-produce-no-id", Run: txnProduceNoID,
			Minibroker: "no transactional id TRANSACTIONAL_ID_AUTHORIZATION_FAILED, no producer id INVALID_RECORD; log end 0",
			Kfake:      "no transactional id NONE, no producer id INVALID_PRODUCER_ID_MAPPING; log end 1",
			Records:    true,
		},
		{
			Name: "txn-offset-commit-unfenced", Row: "txn-offset-commit-unfenced", Run: txnOffsetCommitUnfenced,
			Minibroker: "beside a member of generation 1: v2 NONE, v3 without a member NONE, a partition orders lacks UNKNOWN_TOPIC_OR_PARTITION; committed 5, 6",
			Kfake:      "beside a member of generation 1: v2 NONE, v3 without a member NONE, a partition orders lacks UNKNOWN_TOPIC_OR_PARTITION; committed 5, 6",
		},
		{
			Name: "txn-staged-offsets", Row: "txn-staged-offsets", Run: txnStagedOffsets,
			Minibroker: "5 staged: committed -1, after commit 5; 9 staged: committed 5, after abort 5",
			Kfake:      "5 staged: committed -1, after commit 5; 9 staged: committed 5, after abort 5",
		},
		{
			Name: "txn-lso", Row: "txn-lso", Run: txnLastStableOffset,
			Minibroker: "high watermark/read_committed latest: open 3/1; plain record beside it 4/1 (Fetch last stable 1); committed 5/5",
			Kfake:      "high watermark/read_committed latest: open 3/1; plain record beside it 4/1 (Fetch last stable 1); committed 5/5",
			Records:    true,
		},
		{
			Name: "txn-read-committed", Row: "txn-read-committed", Run: txnReadCommitted,
			Minibroker: "read_committed from 0: 0-1, 2 abort, 3, 4 commit, aborted its from 0, last stable 5; from 3: 3, 4 commit, aborted none, last stable 5; from 5: no batches, aborted none, last stable 5; read_uncommitted from 0: 0-1, 2 abort, 3, 4 commit, 5, aborted none (null), last stable 5",
			Kfake:      "read_committed from 0: 0-1, 2 abort, 3, 4 commit, aborted its from 0, last stable 5; from 3: 3, 4 commit, aborted none (null), last stable 5; from 5: no batches, aborted none (null), last stable 5; read_uncommitted from 0: 0-1, 2 abort, 3, 4 commit, 5, aborted none (null), last stable 5",
			Records:    true,
		},
		{
			Name: "txn-markers", Row: "txn-markers", Run: txnMarkers,
			Minibroker: "0, 1 commit, 2, 3 abort; 1: attributes 0x30, sequence -1, 1 record, its producer at epoch +0, key v0 type 1, value v0 coordinator epoch 0; 3: attributes 0x30, sequence -1, 1 record, its producer at epoch +0, key v0 type 0, value v0 coordinator epoch 0; high watermark 4",
			Kfake:      "0, 1 commit, 2, 3 abort; 1: attributes 0x30, sequence -1, 1 record, its producer at epoch +0, key v0 type 1, value v0 coordinator epoch 0; 3: attributes 0x30, sequence -1, 1 record, its producer at epoch +0, key v0 type 0, value v0 coordinator epoch 0; high watermark 4",
			Records:    true,
		},
		{
			Name: "pipelined-requests", Row: "wire-response-order", Run: pipelinedInOrder,
			Minibroker: "4 answers, in request order",
			Kfake:      "4 answers, in request order",
		},
		{
			Name: "apiversions-unsupported-version", Row: "wire-apiversions-fallback", Run: apiVersionsUnsupported,
			Minibroker: "UNSUPPORTED_VERSION, v0 body with its range; stays open",
			Kfake:      "UNSUPPORTED_VERSION, v0 body with its range; stays open",
		},
		{
			Name: "unsupported-version", Row: "wire-connection-rules", Run: unsupportedVersion,
			Minibroker: "connection closed",
			Kfake:      "connection closed",
		},
		{
			Name: "kip848-two-owners", Row: "kip848-no-revocation", Run: twoOwners,
			Minibroker: "joiner gets orders-2,orders-3 at its join; both own orders-2,orders-3; old owner's commit of orders-2 REBALANCE_IN_PROGRESS, not stored; its heartbeat: epoch 2 orders-0,orders-1; joiner then orders-2,orders-3; after the old owner's next heartbeat (epoch 2) orders-2,orders-3",
			Kfake:      "joiner gets (none) at its join; both own (none); old owner's commit of orders-2 NONE, stored; its heartbeat: epoch 1 orders-0,orders-1; joiner then (none); after the old owner's next heartbeat (epoch 2) orders-2,orders-3",
		},
		{
			Name: "kip848-previous-epoch-heartbeat", Row: "kip848-heartbeat-fencing", Run: previousEpochHeartbeat,
			Minibroker: "previous epoch FENCED_MEMBER_EPOCH; epoch ahead FENCED_MEMBER_EPOCH",
			Kfake:      "previous epoch NONE at epoch 2; epoch ahead FENCED_MEMBER_EPOCH",
		},
		{
			Name: "kip848-previous-epoch-commit", Row: "kip848-commit-epoch", Run: previousEpochCommit,
			Minibroker: "previous epoch STALE_MEMBER_EPOCH, not stored; epoch ahead STALE_MEMBER_EPOCH",
			Kfake:      "previous epoch NONE, stored; epoch ahead STALE_MEMBER_EPOCH",
		},
		{
			Name: "kip848-unknown-group", Row: "kip848-unknown-group", Run: consumerUnknownGroup,
			Minibroker: "heartbeat UNKNOWN_MEMBER_ID; then described: GROUP_ID_NOT_FOUND",
			Kfake:      "heartbeat UNKNOWN_MEMBER_ID; then described: Empty with 0 members",
		},
		{
			Name: "kip848-leave-unknown-member", Row: "kip848-leave-unknown-member", Run: consumerLeaveUnknownMember,
			Minibroker: "known group NONE; unknown group NONE",
			Kfake:      "known group UNKNOWN_MEMBER_ID; unknown group UNKNOWN_MEMBER_ID",
		},
		{
			Name: "kip848-assignors", Row: "kip848-assignors", Run: consumerAssignors,
			Minibroker: `cooperative-sticky UNSUPPORTED_ASSIGNOR; default described as "uniform"; it splits orders member-1 orders-0,orders-2, member-2 orders-1,orders-3`,
			Kfake:      `cooperative-sticky UNSUPPORTED_ASSIGNOR; default described as ""; it splits orders member-1 orders-0,orders-1, member-2 orders-2,orders-3`,
		},
		{
			Name: "kip848-describe-topic-ids", Row: "kip848-describe", Run: consumerDescribeTopicIDs,
			Minibroker: "Stable at epoch 1 (assignment epoch 1); orders by its Metadata id and by name",
			Kfake:      "Stable at epoch 1 (assignment epoch 1); orders by its Metadata id, no name",
		},
		{
			Name: "kip848-rejoin-known-id", Row: "kip848-rejoin", Run: consumerRejoinKnownID,
			Minibroker: "NONE at epoch 1 with orders-0,orders-1,orders-2,orders-3",
			Kfake:      "NONE at epoch 1 with orders-0,orders-1,orders-2,orders-3",
		},
		{
			Name: "kip848-classic-group", Row: "kip848-group-type", Run: consumerClassicGroup,
			Minibroker: "heartbeat join into a classic group GROUP_ID_NOT_FOUND; JoinGroup into a consumer group INCONSISTENT_GROUP_PROTOCOL",
			Kfake:      "heartbeat join into a classic group GROUP_ID_NOT_FOUND; JoinGroup into a consumer group NONE",
		},
		{
			Name: "kip848-static-takeover", Row: "kip848-static-regex", Run: consumerStaticTakeover,
			Minibroker: "-2 NONE epoch -2; takeover NONE epoch +0; live holder UNRELEASED_INSTANCE_ID",
			Kfake:      "-2 NONE epoch -2; takeover NONE epoch +0; live holder UNRELEASED_INSTANCE_ID",
		},
		{
			Name: "kip848-invalid-regex", Row: "kip848-static-regex", Run: consumerInvalidRegex,
			Minibroker: "INVALID_REGULAR_EXPRESSION; a valid one NONE with 4 partitions",
			Kfake:      "INVALID_REQUEST; a valid one NONE with 4 partitions",
		},
		{
			Name: "kip848-static-leave-no-instance", Row: "kip848-static-leave-no-instance", Run: consumerStaticLeaveWithoutInstance,
			Minibroker: "NONE epoch -2",
			Kfake:      "NONE epoch -2",
		},
		{
			// How many records minibroker processes twice depends on timing.
			Name: "etl-churn", Row: "etl-duplicates", Run: etlChurn, Topics: etlChurnTopics(), Timeout: etlChurnTimeout, Pattern: true, Alone: true,
			Minibroker: `^plain: 0 missing, \d+ twice; txn: 0 missing, 0 twice out$`,
			Kfake:      `^plain: 0 missing, 0 twice; txn: 0 missing, 0 twice out$`,
		},
	}
}
