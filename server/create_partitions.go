package server

// CreatePartitions (key 37), versions 0-3, all that Kafka 4 serves.
//
// v1 is v0 (throttling); v2 is flexible; v3 is v2. A topic's count must
// grow (equal or fewer: INVALID_PARTITIONS, as Kafka); the partitions of
// all topics together stay within the broker's cap (INVALID_PARTITIONS,
// naming the limit, checked before anything is made, so a request for
// 100,000 partitions allocates nothing); an unknown topic is
// UNKNOWN_TOPIC_OR_PARTITION; a manual assignment must give one replica
// list of [0] per new partition (INVALID_REPLICA_ASSIGNMENT otherwise); a
// topic named twice is INVALID_REQUEST for each, as Kafka. ValidateOnly
// checks and changes nothing. The new partitions' logs exist before the
// catalog shows them; the groups that subscribe then move to a new
// generation, reason "partitions added" (topics/).

import (
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (s *Server) handleCreatePartitions(r *request, req *kmsg.CreatePartitionsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.CreatePartitionsResponse)
	seen := map[string]int{}
	var dup *string // the message of the topics named more than once
	for _, t := range req.Topics {
		seen[t.Topic]++
	}
	for _, t := range req.Topics {
		rt := kmsg.NewCreatePartitionsResponseTopic()
		rt.Topic = t.Topic
		err := s.createPartitions(t, req.ValidateOnly, seen[t.Topic] > 1)
		if err != nil {
			r.setCode(&rt.ErrorCode, s.code(err))
			rt.ErrorMessage = sharedMessage(err, &dup)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// createPartitions validates and, unless validateOnly, applies one
// topic's new count.
func (s *Server) createPartitions(t kmsg.CreatePartitionsRequestTopic, validateOnly, duplicate bool) error {
	if duplicate {
		return errDuplicateTopic
	}
	if cur, ok := s.catalog.Partitions(t.Topic); ok && t.Assignment != nil && t.Count > cur {
		if int64(len(t.Assignment)) != int64(t.Count)-int64(cur) {
			return fmt.Errorf("%w: %d replica lists for %d new partitions", kerr.InvalidReplicaAssignment, len(t.Assignment), int64(t.Count)-int64(cur))
		}
		for i, a := range t.Assignment {
			if !slices.Equal(a.Replicas, []int32{NodeID}) {
				return fmt.Errorf("%w: new partition %d: replicas %v on a single broker (node %d)", kerr.InvalidReplicaAssignment, i, a.Replicas, NodeID)
			}
		}
	}
	_, err := s.topics.AddPartitions(t.Topic, t.Count, validateOnly)
	return err
}
