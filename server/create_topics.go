package server

// CreateTopics (key 19), versions 0-7.
//
// v1 adds ValidateOnly and error messages; v4 (KIP-464) lets partitions
// and replication factor be -1 for the broker default (1 here); v5 is
// flexible and echoes partitions, replication factor and configs; v7 adds
// topic ids (all zero here). Replication factor must be 1 or -1 on a
// single broker (INVALID_REPLICATION_FACTOR); partitions at least 1
// (INVALID_PARTITIONS); a manual replica assignment decides the partition
// count. A new topic is saved to the catalog in the data dir before it is
// shown to anyone or answered (catalog.Catalog.Create).
//
// A topic's configs (retention.bytes, segment.bytes, max.message.bytes;
// topics/) are checked before anything else is made: an unknown
// name, a bad or null value is INVALID_CONFIG, a name given twice
// INVALID_REQUEST, and the topic is not created. v5+ answers every topic
// config with its value and source, as DescribeConfigs.

import (
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/catalog"
	"github.com/minibroker/minibroker/records"
)

func (s *Server) handleCreateTopics(r *request, req *kmsg.CreateTopicsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.CreateTopicsResponse)
	seen := map[string]int{}
	var dup *string // the message of the topics named more than once
	for _, t := range req.Topics {
		seen[t.Topic]++
	}
	for _, t := range req.Topics {
		rt := kmsg.NewCreateTopicsResponseTopic()
		rt.Topic = t.Topic
		created, err := s.createTopic(t, req.ValidateOnly, seen[t.Topic] > 1)
		if err != nil {
			r.setCode(&rt.ErrorCode, s.code(err))
			rt.ErrorMessage = sharedMessage(err, &dup)
		} else {
			rt.NumPartitions, rt.ReplicationFactor = created.Partitions, 1
			for _, e := range s.topicEntries(created) {
				c := kmsg.NewCreateTopicsResponseTopicConfig()
				c.Name, c.Value, c.Source = e.name, kmsg.StringPtr(e.value), int8(e.source)
				rt.Configs = append(rt.Configs, c)
			}
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// createTopic validates and, unless validateOnly, creates one topic. It
// returns the topic (without an id when validateOnly).
func (s *Server) createTopic(t kmsg.CreateTopicsRequestTopic, validateOnly, duplicate bool) (catalog.Topic, error) {
	if duplicate {
		return catalog.Topic{}, errDuplicateTopic
	}
	if t.ReplicationFactor != 1 && t.ReplicationFactor != -1 && len(t.ReplicaAssignment) == 0 {
		return catalog.Topic{}, fmt.Errorf("%w: replication factor %d on a single broker", kerr.InvalidReplicationFactor, t.ReplicationFactor)
	}
	configs := make(map[string]string, len(t.Configs))
	for _, c := range t.Configs {
		if _, dup := configs[c.Name]; dup {
			return catalog.Topic{}, fmt.Errorf("%w: Error due to duplicate config keys", kerr.InvalidRequest)
		}
		if c.Value == nil {
			return catalog.Topic{}, fmt.Errorf("%w: Null value not supported for topic configs: %s", kerr.InvalidConfig, c.Name)
		}
		configs[c.Name] = *c.Value
	}
	partitions := t.NumPartitions
	if partitions == -1 {
		partitions = 1
	}
	if len(t.ReplicaAssignment) > 0 {
		if t.NumPartitions != -1 || t.ReplicationFactor != -1 {
			return catalog.Topic{}, fmt.Errorf("%w: replica assignment needs partitions and replication factor -1", kerr.InvalidRequest)
		}
		partitions = int32(len(t.ReplicaAssignment))
	}
	created, err := s.topics.Create(t.Topic, partitions, configs, validateOnly)
	if errors.Is(err, catalog.ErrStorage) && !errors.Is(err, records.ErrTooManyPartitions) {
		s.logger.Error("saving topic catalog failed", "topic", t.Topic, "err", err)
	}
	return created, err
}
