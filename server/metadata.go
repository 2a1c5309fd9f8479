package server

// Metadata (key 3), versions 0-12.
//
// This broker is the only node and the leader of every partition. v1 adds
// the controller and null topics meaning "all" (in v0 an empty list means
// all); v2 the cluster id; v7 leader epochs; v9 is flexible; v10 adds topic
// ids: the catalog's, stable across restarts, which KIP-848 clients need
// to read their assignments; v12 makes topic names nullable, so a topic
// can be asked for by id (an unknown id is UNKNOWN_TOPIC_ID, as Kafka's
// KafkaApis.handleTopicMetadataRequest answers). A topic a request names
// that does not exist is created, with Config.DefaultPartitions
// partitions, when the broker auto-creates topics and the request allows
// it (v4+; every request before v4), as Kafka's auto.create.topics.enable
// does; otherwise it gets UNKNOWN_TOPIC_OR_PARTITION, and the broker logs
// it (once a minute per topic) so a consumer left waiting is not silent.

import (
	"errors"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/catalog"
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
	// Kafka auto-creates what a request names and allows (v4+; before
	// v4 every request allowed it), when the broker does.
	allowCreate := s.autoCreate && !all && (req.Version < 4 || req.AllowAutoTopicCreation)
	for _, name := range names {
		topic := kmsg.MetadataResponseTopic{Topic: &name}
		t, ok := s.catalog.Lookup(name)
		switch {
		case ok:
		case allowCreate:
			var err error
			if t, err = s.autoCreateTopic(r, name); err != nil {
				r.setCode(&topic.ErrorCode, s.code(err))
			}
		default:
			if s.unknown.first("metadata", name) {
				r.logger.Info("metadata for a topic that does not exist: a consumer of it waits until it is created (CreateTopics, --topic, or a producer with topic auto-creation)",
					"topic", name, "client", r.clientID)
				s.observer.TopicNoticed(TopicEvent{Kind: TopicMissing, Topic: name, ClientID: r.clientID, Host: r.host})
			}
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

// autoCreateTopic creates a topic a Metadata request named, with the
// default partition count, as Kafka's auto.create.topics.enable does. The
// topic is answered at once, whole: Kafka answers LEADER_NOT_AVAILABLE
// until its controller has placed the partitions, which one broker need
// not (docs/behavior-matrix.md).
func (s *Server) autoCreateTopic(r *request, name string) (catalog.Topic, error) {
	t, err := s.catalog.Create(name, s.defaultParts)
	switch {
	case err == nil:
		r.logger.Warn("topic created on first use: a request named a topic that did not exist (is it a typo? --auto-create-topics=false turns this off)",
			"topic", name, "partitions", t.Partitions, "client", r.clientID)
		s.observer.TopicNoticed(TopicEvent{Kind: TopicAutoCreated, Topic: name, ClientID: r.clientID, Host: r.host, Partitions: t.Partitions})
		return t, nil
	case errors.Is(err, catalog.ErrTopicExists): // created meanwhile
		t, _ = s.catalog.Lookup(name)
		return t, nil
	case errors.Is(err, catalog.ErrStorage):
		r.logger.Error("auto-creating a topic failed", "topic", name, "err", err)
	}
	return catalog.Topic{}, err
}

// unknownTopics rate-limits what the broker says about a topic that does
// not exist: a client waiting for one asks every few hundred milliseconds.
// One line and one TopicEvent per kind and topic per minute; the map is
// forgotten when it grows past a bound, so names a peer invents cannot
// grow it without end.
type unknownTopics struct {
	mu   sync.Mutex
	last map[string]time.Time // guarded by mu; keyed by kind and name
}

const (
	unknownTopicEvery = time.Minute
	unknownTopicNames = 1024
)

// first reports whether kind and name were not reported in the last
// minute, and notes them as reported now.
func (u *unknownTopics) first(kind, name string) bool {
	now := time.Now()
	key := kind + "\x00" + name
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.last == nil || len(u.last) >= unknownTopicNames {
		u.last = make(map[string]time.Time)
	}
	prev, seen := u.last[key]
	if seen && now.Sub(prev) < unknownTopicEvery {
		return false
	}
	u.last[key] = now
	return true
}
