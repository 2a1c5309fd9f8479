package server

// A fault's error code, answered in the place each API has for it. An API
// with partition codes gets the code on the partitions the fault matches,
// and the rest of the request is served as usual: for Produce and
// OffsetCommit the matched partitions are taken out of the request before
// the handler sees it, so nothing is appended or committed for them; for
// Fetch too, so a fetch whose partitions are all matched answers at once
// instead of waiting. The read-only ListOffsets and OffsetFetch are
// handled whole and the matched answers overwritten. Every other API
// answers the code at its top level, unhandled, so the request changes
// nothing.

import (
	"reflect"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// hasErrorCode reports whether a request of key can be answered with a
// fault's error code: whether its answer has a top-level or a partition
// code.
func hasErrorCode(key kmsg.Key) bool {
	switch key {
	case kmsg.Metadata, kmsg.CreateTopics, kmsg.DeleteTopics, kmsg.CreatePartitions, kmsg.DeleteRecords, kmsg.DescribeGroups, kmsg.DeleteGroups, kmsg.ConsumerGroupDescribe,
		kmsg.DescribeConfigs, kmsg.AlterConfigs, kmsg.IncrementalAlterConfigs:
		return false
	}
	return true
}

// answerFault answers req with f's code.
func (s *Server) answerFault(r *request, req kmsg.Request, f *Fault) kmsg.Response {
	switch req := req.(type) {
	case *kmsg.ProduceRequest:
		return s.faultProduce(r, req, f)
	case *kmsg.FetchRequest:
		return s.faultFetch(r, req, f)
	case *kmsg.OffsetCommitRequest:
		return s.faultOffsetCommit(r, req, f)
	case *kmsg.ListOffsetsRequest:
		return s.faultListOffsets(r, req, f)
	case *kmsg.OffsetFetchRequest:
		return s.faultOffsetFetch(r, req, f)
	case *kmsg.FindCoordinatorRequest:
		resp := req.ResponseKind().(*kmsg.FindCoordinatorResponse)
		if req.Version < 4 {
			r.setCode(&resp.ErrorCode, f.Err)
			resp.NodeID, resp.Port = -1, -1
			return resp
		}
		for _, key := range req.CoordinatorKeys {
			c := kmsg.NewFindCoordinatorResponseCoordinator()
			c.Key, c.NodeID, c.Port = key, -1, -1
			r.setCode(&c.ErrorCode, f.Err)
			resp.Coordinators = append(resp.Coordinators, c)
		}
		return resp
	case *kmsg.AddPartitionsToTxnRequest: // v0-3: partition codes only
		resp := req.ResponseKind().(*kmsg.AddPartitionsToTxnResponse)
		for _, t := range req.Topics {
			rt := kmsg.NewAddPartitionsToTxnResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewAddPartitionsToTxnResponseTopicPartition()
				rp.Partition = p
				r.setCode(&rp.ErrorCode, f.Err)
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	case *kmsg.DescribeTransactionsRequest: // a code per transactional id
		resp := req.ResponseKind().(*kmsg.DescribeTransactionsResponse)
		for _, id := range req.TransactionalIDs {
			st := kmsg.NewDescribeTransactionsResponseTransactionState()
			st.TransactionalID, st.ProducerID, st.ProducerEpoch, st.StartTimestamp = id, -1, -1, -1
			r.setCode(&st.ErrorCode, f.Err)
			resp.TransactionStates = append(resp.TransactionStates, st)
		}
		return resp
	case *kmsg.TxnOffsetCommitRequest: // partition codes only
		resp := req.ResponseKind().(*kmsg.TxnOffsetCommitResponse)
		for _, t := range req.Topics {
			rt := kmsg.NewTxnOffsetCommitResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
				rp.Partition = p.Partition
				r.setCode(&rp.ErrorCode, f.Err)
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	}
	// The rest have a top-level ErrorCode (hasErrorCode); the answer's
	// other fields keep Kafka's defaults (generation -1, producer id -1).
	resp := req.ResponseKind()
	code := reflect.ValueOf(resp).Elem().FieldByName("ErrorCode").Addr().Interface().(*int16)
	r.setCode(code, f.Err)
	return resp
}

// cutPartitions splits one topic's partitions of a request into those f
// leaves to the handler and the numbers of those it answers.
func cutPartitions[P any](f *Fault, topic string, ps []P, num func(*P) int32) (kept []P, cut []int32) {
	for i := range ps {
		if f.cuts(topic, num(&ps[i])) {
			cut = append(cut, num(&ps[i]))
		} else {
			kept = append(kept, ps[i])
		}
	}
	return kept, cut
}

// topicCut is the partitions of one topic a fault answers.
type topicCut struct {
	topic string
	parts []int32
}

// topicEntry returns the entry for topic in an answer's topics, added if
// it is not there. The pointer is good until the next append to ts.
func topicEntry[T any](ts *[]T, topic string, name func(*T) string, fresh func(string) T) *T {
	for i := range *ts {
		if name(&(*ts)[i]) == topic {
			return &(*ts)[i]
		}
	}
	*ts = append(*ts, fresh(topic))
	return &(*ts)[len(*ts)-1]
}

func (s *Server) faultProduce(r *request, req *kmsg.ProduceRequest, f *Fault) kmsg.Response {
	var cuts []topicCut
	var kept []kmsg.ProduceRequestTopic
	for _, t := range req.Topics {
		parts, cut := cutPartitions(f, t.Topic, t.Partitions, func(p *kmsg.ProduceRequestTopicPartition) int32 { return p.Partition })
		if cut != nil {
			cuts = append(cuts, topicCut{t.Topic, cut})
		}
		if parts != nil {
			t.Partitions = parts
			kept = append(kept, t)
		}
	}
	resp := req.ResponseKind().(*kmsg.ProduceResponse)
	if len(kept) > 0 {
		rest := *req // the caller's request is left as it came
		rest.Topics = kept
		out := s.handle(r, &rest)
		if out == nil {
			return nil // acks 0: nothing is answered
		}
		resp = out.(*kmsg.ProduceResponse)
	} else if req.Acks == 0 {
		return nil
	}
	for _, c := range cuts {
		rt := topicEntry(&resp.Topics, c.topic, func(t *kmsg.ProduceResponseTopic) string { return t.Topic },
			func(name string) kmsg.ProduceResponseTopic {
				t := kmsg.NewProduceResponseTopic()
				t.Topic = name
				return t
			})
		for _, p := range c.parts {
			rp := kmsg.NewProduceResponseTopicPartition()
			rp.Partition = p
			r.setCode(&rp.ErrorCode, f.Err)
			rt.Partitions = append(rt.Partitions, rp)
		}
	}
	return resp
}

func (s *Server) faultFetch(r *request, req *kmsg.FetchRequest, f *Fault) kmsg.Response {
	var cuts []topicCut
	var kept []kmsg.FetchRequestTopic
	for _, t := range req.Topics {
		parts, cut := cutPartitions(f, t.Topic, t.Partitions, func(p *kmsg.FetchRequestTopicPartition) int32 { return p.Partition })
		if cut != nil {
			cuts = append(cuts, topicCut{t.Topic, cut})
		}
		if parts != nil {
			t.Partitions = parts
			kept = append(kept, t)
		}
	}
	resp := req.ResponseKind().(*kmsg.FetchResponse)
	if len(kept) > 0 {
		rest := *req // the caller's request is left as it came
		rest.Topics = kept
		resp = s.handle(r, &rest).(*kmsg.FetchResponse)
	}
	for _, c := range cuts {
		rt := topicEntry(&resp.Topics, c.topic, func(t *kmsg.FetchResponseTopic) string { return t.Topic },
			func(name string) kmsg.FetchResponseTopic { t := kmsg.NewFetchResponseTopic(); t.Topic = name; return t })
		for _, p := range c.parts {
			rp := kmsg.NewFetchResponseTopicPartition()
			rp.Partition, rp.HighWatermark, rp.LastStableOffset, rp.LogStartOffset = p, -1, -1, -1
			r.setCode(&rp.ErrorCode, f.Err)
			rt.Partitions = append(rt.Partitions, rp)
		}
	}
	return resp
}

func (s *Server) faultOffsetCommit(r *request, req *kmsg.OffsetCommitRequest, f *Fault) kmsg.Response {
	var cuts []topicCut
	var kept []kmsg.OffsetCommitRequestTopic
	for _, t := range req.Topics {
		parts, cut := cutPartitions(f, t.Topic, t.Partitions, func(p *kmsg.OffsetCommitRequestTopicPartition) int32 { return p.Partition })
		if cut != nil {
			cuts = append(cuts, topicCut{t.Topic, cut})
		}
		if parts != nil {
			t.Partitions = parts
			kept = append(kept, t)
		}
	}
	resp := req.ResponseKind().(*kmsg.OffsetCommitResponse)
	if len(kept) > 0 {
		rest := *req // the caller's request is left as it came
		rest.Topics = kept
		resp = s.handle(r, &rest).(*kmsg.OffsetCommitResponse)
	}
	for _, c := range cuts {
		rt := topicEntry(&resp.Topics, c.topic, func(t *kmsg.OffsetCommitResponseTopic) string { return t.Topic },
			func(name string) kmsg.OffsetCommitResponseTopic {
				t := kmsg.NewOffsetCommitResponseTopic()
				t.Topic = name
				return t
			})
		for _, p := range c.parts {
			rp := kmsg.NewOffsetCommitResponseTopicPartition()
			rp.Partition = p
			r.setCode(&rp.ErrorCode, f.Err)
			rt.Partitions = append(rt.Partitions, rp)
		}
	}
	return resp
}

func (s *Server) faultListOffsets(r *request, req *kmsg.ListOffsetsRequest, f *Fault) kmsg.Response {
	resp := s.handle(r, req).(*kmsg.ListOffsetsResponse)
	for i := range resp.Topics {
		t := &resp.Topics[i]
		for j := range t.Partitions {
			if p := &t.Partitions[j]; f.cuts(t.Topic, p.Partition) {
				fresh := kmsg.NewListOffsetsResponseTopicPartition()
				fresh.Partition = p.Partition
				*p = fresh
				r.setCode(&p.ErrorCode, f.Err)
			}
		}
	}
	return resp
}

// faultOffsetFetch answers f's code on the partitions it matches, or, for
// a fault without a topic filter, as the group's code: v2-7 at the top,
// v8+ on each group it matches (v1 has only partition codes).
func (s *Server) faultOffsetFetch(r *request, req *kmsg.OffsetFetchRequest, f *Fault) kmsg.Response {
	resp := s.handle(r, req).(*kmsg.OffsetFetchResponse)
	whole := f.Topic == "" && len(f.Partitions) == 0
	if whole && req.Version >= 2 && req.Version < 8 {
		resp.Topics = nil
		r.setCode(&resp.ErrorCode, f.Err)
		return resp
	}
	for i := range resp.Topics {
		t := &resp.Topics[i]
		for j := range t.Partitions {
			if p := &t.Partitions[j]; f.cuts(t.Topic, p.Partition) {
				p.Offset, p.LeaderEpoch, p.Metadata = -1, -1, nil
				r.setCode(&p.ErrorCode, f.Err)
			}
		}
	}
	for i := range resp.Groups {
		g := &resp.Groups[i]
		if f.Group != "" && g.Group != f.Group {
			continue
		}
		if whole {
			g.Topics = nil
			r.setCode(&g.ErrorCode, f.Err)
			continue
		}
		for j := range g.Topics {
			t := &g.Topics[j]
			for k := range t.Partitions {
				if p := &t.Partitions[k]; f.cuts(t.Topic, p.Partition) {
					p.Offset, p.LeaderEpoch, p.Metadata = -1, -1, nil
					r.setCode(&p.ErrorCode, f.Err)
				}
			}
		}
	}
	return resp
}
