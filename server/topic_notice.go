package server

import (
	"maps"
	"slices"

	"github.com/minibroker/minibroker/coordinator"
)

// joinRefused logs a join refused for a subscription to a topic that does
// not exist, and reports each such topic (TopicJoinRefused), at most once
// a minute per group and topic: a client retries its join.
func (s *Server) joinRefused(r *request, group, memberID string, protocols []coordinator.Protocol, err error) {
	missing := map[string]bool{}
	for _, p := range protocols {
		for _, t := range p.Topics {
			if _, ok := s.catalog.Partitions(t); !ok {
				missing[t] = true
			}
		}
	}
	for _, t := range slices.Sorted(maps.Keys(missing)) {
		if !s.unknown.first("join\x00"+group, t) {
			continue
		}
		r.logger.Info("join refused: a subscribed topic does not exist", "group", group, "member", memberID,
			"client", r.clientID, "topic", t, "err", err)
		s.observer.TopicNoticed(TopicEvent{Kind: TopicJoinRefused, Topic: t, ClientID: r.clientID, Host: r.host, Group: group})
	}
}
