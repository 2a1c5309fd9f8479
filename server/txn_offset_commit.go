package server

// TxnOffsetCommit (key 28), versions 0-3.
//
// A transactional producer commits a group's offsets inside its
// transaction (KIP-98); v2 adds leader epochs; v3 (KIP-447) is flexible
// and carries the group's generation, member id and instance id, which
// fence the commit exactly as an OffsetCommit is fenced: the group
// coordinator's one validation path, the chapter's checks in the
// chapter's order (ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID, the ownership
// code REBALANCE_IN_PROGRESS), the member epoch for a KIP-848 group
// (STALE_MEMBER_EPOCH). Generation -1 with an empty member id (v0-2
// always) names no member and is not fenced, as in Kafka. First the
// transaction coordinator checks the producer: an unknown transactional
// id or another producer id INVALID_PRODUCER_ID_MAPPING, a stale epoch
// PRODUCER_FENCED (INVALID_PRODUCER_EPOCH below v2), a group the
// transaction did not add (AddOffsetsToTxn) INVALID_TXN_STATE. Accepted
// offsets are staged: they become the group's committed offsets when
// EndTxn commits, and OffsetFetch with RequireStable answers
// UNSTABLE_OFFSET_COMMIT for their partitions until then. All or
// nothing: every partition carries the one code.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/coordinator"
	"github.com/minibroker/minibroker/offsets"
)

func (s *Server) handleTxnOffsetCommit(r *request, req *kmsg.TxnOffsetCommitRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.TxnOffsetCommitResponse)
	var entries []offsets.Entry
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			entries = append(entries, commitEntry(t.Topic, p.Partition, p.Offset, p.Metadata, p.LeaderEpoch, req.Version >= 2))
		}
	}
	cr := coordinator.CommitRequest{Group: req.Group, MemberID: req.MemberID, Generation: req.Generation, Entries: entries,
		InstanceID: instanceID(req.InstanceID)}
	if req.Version < 3 {
		cr.MemberID, cr.Generation, cr.InstanceID = "", -1, ""
	}
	start := s.started()
	err := s.txns.StageOffsets(req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Group, func() error {
		return s.coord.StageTxnCommit(req.ProducerID, cr)
	})
	code := s.txnCode(err, req.Version)
	s.observer.CommitDone(req.Group, s.took(start), code)
	s.fenced(r.logger, kmsg.TxnOffsetCommit, req.Group, cr.MemberID, cr.Generation, err)
	for _, t := range req.Topics {
		rt := kmsg.TxnOffsetCommitResponseTopic{Topic: t.Topic}
		for _, p := range t.Partitions {
			rp := kmsg.TxnOffsetCommitResponseTopicPartition{Partition: p.Partition}
			r.setCode(&rp.ErrorCode, code)
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// stableOffsets is fetchOffsets for an OffsetFetch, with RequireStable's
// rule: every partition that a transaction holds staged offsets for
// answers UNSTABLE_OFFSET_COMMIT, offset -1 (Kafka's
// GroupMetadataManager.handleFetchOffsets). The staged partitions are
// looked up before the committed offsets are read: EndTxn forgets staged
// offsets once they are applied, so a partition not staged then reads a
// committed offset that holds every commit ended by then. Read the other
// way round, a commit ending between the two answers the offset before
// it with no error, and the partition's new owner processes again what
// the committed transaction processed.
func (s *Server) stableOffsets(group string, requireStable bool, order []string, topics map[string][]int32) []fetchedTopic {
	if !requireStable {
		return s.fetchOffsets(group, order, topics)
	}
	pending := s.coord.TxnPendingKeys(group)
	fts := s.fetchOffsets(group, order, topics)
	for i := range fts {
		for j := range fts[i].partitions {
			fp := &fts[i].partitions[j]
			if pending[offsets.Key{Topic: fts[i].topic, Partition: fp.partition}] {
				fp.offset, fp.leaderEpoch, fp.metadata, fp.code = -1, offsets.NoLeaderEpoch, nil, kerr.UnstableOffsetCommit.Code
			}
		}
	}
	return fts
}
