package server

// OffsetCommit (key 8), versions 0-9.
//
// v1 adds generation and member id (v1's per-partition timestamp is
// ignored); v2-4 a retention time (ignored: retention is the broker's
// --offsets-retention, as in Kafka since KIP-211); v5 drops both; v6 adds leader epochs, which we store and return; v7 adds
// instance ids (a classic member id the instance no longer holds is
// FENCED_INSTANCE_ID, before the chapter's checks); v8 is flexible. v0 has no generation: it is a
// direct commit.
//
// Generation -1 with an empty member id is a direct commit (a consumer
// with a manual assignment): stored unfenced, as in the chapter. Anything
// else is a group commit, checked in the chapter's order. Either way the
// commit is all-or-nothing: a rejected commit stores nothing, and every
// requested partition carries the one code that rejected it. Besides the
// chapter's checks: an over-long or non-text group id is INVALID_GROUP_ID
// (the empty one is allowed, as in Kafka), an over-long or non-text member
// id INVALID_REQUEST, metadata over the limit OFFSET_METADATA_TOO_LARGE, a
// direct commit that would create a group beyond the group limit
// POLICY_VIOLATION, and a commit the disk refuses KAFKA_STORAGE_ERROR.
//
// A member of a consumer (KIP-848) group commits under Kafka's rules for
// one (ConsumerGroup.validateOffsetCommit): v9 or later, whose Generation
// field carries the member epoch (older versions get UNSUPPORTED_VERSION),
// and exactly the member's current epoch (STALE_MEMBER_EPOCH otherwise, as
// Kafka up to 4.2), then the chapter's ownership check against the
// member's current assignment (REBALANCE_IN_PROGRESS).

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/coordinator"
	"github.com/minibroker/minibroker/offsets"
)

func (s *Server) handleOffsetCommit(r *request, req *kmsg.OffsetCommitRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.OffsetCommitResponse)
	n := 0
	for _, t := range req.Topics {
		n += len(t.Partitions)
	}
	entries := make([]offsets.Entry, 0, n)
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			entries = append(entries, commitEntry(t.Topic, p.Partition, p.Offset, p.Metadata, p.LeaderEpoch, req.Version >= 6))
		}
	}
	start := s.started()
	var err error
	if req.Version == 0 || (req.Generation < 0 && req.MemberID == "") {
		err = s.coord.CommitDirect(req.Group, entries)
	} else {
		err = s.coord.CommitMember(coordinator.CommitRequest{
			Group: req.Group, MemberID: req.MemberID, Generation: req.Generation, Entries: entries,
			NoMemberEpoch: req.Version < 9, InstanceID: instanceID(req.InstanceID),
		})
	}
	code := s.code(err)
	s.observer.CommitDone(req.Group, s.took(start), code)
	// Only group commits can be fenced; a direct commit's codes never are.
	s.fenced(r.logger, kmsg.OffsetCommit, req.Group, req.MemberID, req.Generation, err)
	resp.Topics = make([]kmsg.OffsetCommitResponseTopic, len(req.Topics))
	for i, t := range req.Topics {
		rt := &resp.Topics[i]
		rt.Topic = t.Topic
		rt.Partitions = make([]kmsg.OffsetCommitResponseTopicPartition, len(t.Partitions))
		for j, p := range t.Partitions {
			rp := &rt.Partitions[j]
			rp.Partition = p.Partition
			r.setCode(&rp.ErrorCode, code)
		}
	}
	return resp
}

// commitEntry is one partition of an OffsetCommit or a TxnOffsetCommit
// as the offset store keeps it; withEpoch says the request's version
// carries the leader epoch (OffsetCommit v6+, TxnOffsetCommit v2+).
func commitEntry(topic string, partition int32, offset int64, metadata *string, leaderEpoch int32, withEpoch bool) offsets.Entry {
	e := offsets.Entry{Topic: topic, Partition: partition, Offset: offset, LeaderEpoch: offsets.NoLeaderEpoch}
	if metadata != nil {
		e.Metadata = *metadata
	}
	if withEpoch {
		e.LeaderEpoch = leaderEpoch
	}
	return e
}
