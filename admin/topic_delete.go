package admin

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/minibroker/minibroker/catalog"
)

// topicDeletedJSON answers DELETE /v1/topics/{topic}.
type topicDeletedJSON struct {
	Topic      string `json:"topic"`
	TopicID    string `json:"topic_id"`
	Partitions int32  `json:"partitions"`
	Deleted    bool   `json:"deleted"`
}

// handleDeleteTopic deletes a topic as DeleteTopics does
// (topics/): its catalog entry, its records, every group's
// committed offsets of it, and a new generation, reason "topic deleted",
// for the groups that subscribe to it. 404 for an unknown topic, 400 for
// a name no topic can have (nothing is deleted), 503 when the catalog
// cannot be saved (nothing is deleted either).
func (s *Server) handleDeleteTopic(w http.ResponseWriter, r *http.Request) {
	if s.topics == nil {
		writeError(w, http.StatusNotFound, "topic deletion is not configured")
		return
	}
	name := r.PathValue("topic")
	t, err := s.topics.Delete(name)
	switch {
	case err == nil:
		s.logger.Info("topic deleted on request", "topic", name, "topic_id", t.ID.String())
		writeJSON(w, http.StatusOK, topicDeletedJSON{Topic: name, TopicID: t.ID.String(), Partitions: t.Partitions, Deleted: true})
	case errors.Is(err, catalog.ErrUnknownTopic):
		writeError(w, http.StatusNotFound, fmt.Sprintf("topic %q not found", name))
	case errors.Is(err, catalog.ErrInvalidTopic):
		writeError(w, http.StatusBadRequest, fmt.Sprintf("%q cannot be a topic name: %v", name, err))
	default:
		writeError(w, http.StatusServiceUnavailable, fmt.Sprintf("deleting topic %q failed: %v", name, err))
	}
}
