package admin

import (
	"fmt"

	"github.com/minibroker/minibroker/server"
)

// topicEvent is one server.TopicEvent, with a sentence that says what it
// means for the client, for GET /v1/events and the page.
type topicEvent struct {
	Seq        uint64 `json:"seq"`
	Time       string `json:"time"`
	TimeMS     int64  `json:"time_ms"`
	Kind       string `json:"kind"` // server.TopicMissing, TopicJoinRefused or TopicAutoCreated
	Topic      string `json:"topic"`
	ClientID   string `json:"client_id"`
	Host       string `json:"host"`
	Group      string `json:"group,omitempty"`
	Partitions int32  `json:"partitions,omitempty"`
	Message    string `json:"message"`
}

// topicMessage says what a topic event means, in words.
func topicMessage(e server.TopicEvent) string {
	switch e.Kind {
	case server.TopicMissing:
		return fmt.Sprintf("unknown topic %q: client %s asked for it; a consumer of it waits until it is created", e.Topic, e.ClientID)
	case server.TopicJoinRefused:
		return fmt.Sprintf("join refused: unknown topic %q (group %s, client %s)", e.Topic, e.Group, e.ClientID)
	case server.TopicAutoCreated:
		parts := "partitions"
		if e.Partitions == 1 {
			parts = "partition"
		}
		return fmt.Sprintf("topic %q created with %d %s because client %s named it: a typo? (--auto-create-topics=false turns this off)", e.Topic, e.Partitions, parts, e.ClientID)
	default:
		return fmt.Sprintf("topic %q: %s (client %s)", e.Topic, e.Kind, e.ClientID)
	}
}

// TopicNoticed records a topic a client named that does not exist, or
// that exists only because it named it (server.Observer).
func (s *Recorder) TopicNoticed(e server.TopicEvent) {
	ev := topicEvent{Kind: e.Kind, Topic: e.Topic, ClientID: e.ClientID, Host: e.Host, Group: e.Group, Partitions: e.Partitions, Message: topicMessage(e)}
	ev.Time, ev.TimeMS = stamp(s.now())
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	ev.Seq = s.seq
	s.topics.push(ev)
}
