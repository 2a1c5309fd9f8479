package server

// DeleteTopics (key 20), versions 1-6, the versions Kafka 4 serves
// (KIP-896 removed v0).
//
// v4 is flexible; v5 adds error messages; v6 names topics by name or,
// with a null name, by topic id (UNKNOWN_TOPIC_ID when no topic has it).
// A topic is deleted by topics/: the catalog's journal line
// first, then a new generation for the groups that subscribe to it, its
// logs and every group's committed offsets of it; it is answered once
// the journal line is synced. An unknown name is
// UNKNOWN_TOPIC_OR_PARTITION, as Kafka; a name no topic could have
// (path characters, "..") is INVALID_TOPIC_EXCEPTION and deletes nothing
// (Kafka: UNKNOWN_TOPIC_OR_PARTITION); a topic named twice in one request
// is INVALID_REQUEST for each, as Kafka.

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/catalog"
)

func (s *Server) handleDeleteTopics(r *request, req *kmsg.DeleteTopicsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.DeleteTopicsResponse)
	type named struct {
		name *string
		id   [16]byte
	}
	var asked []named
	if req.Version < 6 {
		for i := range req.TopicNames {
			asked = append(asked, named{name: &req.TopicNames[i]})
		}
	} else {
		for _, t := range req.Topics {
			asked = append(asked, named{name: t.Topic, id: t.TopicID})
		}
	}
	seen := map[string]int{}
	var dup *string // the message of the topics named more than once
	for _, a := range asked {
		if a.name != nil {
			seen[*a.name]++
		}
	}
	for _, a := range asked {
		rt := kmsg.NewDeleteTopicsResponseTopic()
		rt.Topic, rt.TopicID = a.name, a.id
		var err error
		switch {
		case a.name != nil && seen[*a.name] > 1:
			err = errDuplicateTopic
		case a.name != nil:
			var t catalog.Topic
			if t, err = s.topics.Delete(*a.name); err == nil {
				rt.TopicID = t.ID
			}
		default:
			t, ok := s.catalog.ByID(a.id)
			if !ok {
				err = fmt.Errorf("%w: no topic has id %s", kerr.UnknownTopicID, catalog.ID(a.id))
				break
			}
			name := t.Name
			rt.Topic = &name
			_, err = s.topics.Delete(name)
		}
		if err != nil {
			r.setCode(&rt.ErrorCode, s.code(err))
			rt.ErrorMessage = sharedMessage(err, &dup)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}
