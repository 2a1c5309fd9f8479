package server

// Metadata (key 3), versions 0-12.
//
// This broker is the only node and the leader of every partition. v1 adds
// the controller and null topics meaning "all" (in v0 an empty list means
// all); v2 the cluster id; v7 leader epochs; v9 is flexible; v10 adds topic
// ids: the catalog's, stable across restarts, which KIP-848 clients need
// to read their assignments; v12 makes topic names nullable, so a topic
// can be asked for by id (an unknown id is UNKNOWN_TOPIC_ID, as Kafka's
// KafkaApis.handleTopicMetadataRequest answers). An
// unknown topic gets UNKNOWN_TOPIC_OR_PARTITION: topics are created only by
// CreateTopics or the command line, never automatically.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (s *Server) handleMetadata(r *request, req *kmsg.MetadataRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.MetadataResponse)
	host, port := s.address()
	resp.Brokers = []kmsg.MetadataResponseBroker{{NodeID: NodeID, Host: host, Port: port}}
	clusterID := ClusterID
	resp.ClusterID = &clusterID
	resp.ControllerID = NodeID

	var names []string
	all := req.Topics == nil || (req.Version == 0 && len(req.Topics) == 0)
	if all {
		for _, t := range s.catalog.List() {
			names = append(names, t.Name)
		}
	}
	for _, t := range req.Topics {
		if t.Topic == nil {
			if known, ok := s.catalog.ByID(t.TopicID); ok {
				names = append(names, known.Name)
				continue
			}
			topic := kmsg.MetadataResponseTopic{TopicID: t.TopicID}
			r.setCode(&topic.ErrorCode, kerr.UnknownTopicID.Code)
			resp.Topics = append(resp.Topics, topic)
			continue
		}
		names = append(names, *t.Topic)
	}
	// About 40 bytes a partition (leader, replicas, ISR) and 300 a topic.
	estimate := int64(300 * len(names))
	for _, name := range names {
		n, _ := s.catalog.Partitions(name)
		estimate += 40 * int64(n)
	}
	if !r.reserve(estimate) {
		return resp
	}
	for _, name := range names {
		topic := kmsg.MetadataResponseTopic{Topic: &name}
		t, ok := s.catalog.Lookup(name)
		if !ok {
			r.setCode(&topic.ErrorCode, kerr.UnknownTopicOrPartition.Code)
		}
		topic.TopicID = t.ID // zero for an unknown topic, as Kafka
		for p := range t.Partitions {
			topic.Partitions = append(topic.Partitions, kmsg.MetadataResponseTopicPartition{
				Partition: p, Leader: NodeID, Replicas: []int32{NodeID}, ISR: []int32{NodeID},
			})
		}
		resp.Topics = append(resp.Topics, topic)
	}
	return resp
}

// partitionExists reports whether topic has partition p.
func (s *Server) partitionExists(topic string, p int32) bool {
	n, ok := s.catalog.Partitions(topic)
	return ok && p >= 0 && p < n
}
