package server

// Heartbeat (key 12), versions 0-4.
//
// The chapter's check order: unknown group, then generation, then member
// (Kafka checks the member first), after the ids' own checks: an empty,
// over-long or non-text group id is INVALID_GROUP_ID, an over-long or
// non-text member id INVALID_REQUEST (coordinator/limits.go). v3 adds
// instance ids: a member id the instance no longer holds (a static
// member's previous run) is FENCED_INSTANCE_ID, asked before the chapter's
// order (coordinator/static.go); v4 is flexible.

import (
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (s *Server) handleHeartbeat(r *request, req *kmsg.HeartbeatRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.HeartbeatResponse)
	err := s.coord.HeartbeatInstance(req.Group, req.MemberID, instanceID(req.InstanceID), req.Generation)
	r.setCode(&resp.ErrorCode, s.code(err))
	s.fenced(r.logger, kmsg.Heartbeat, req.Group, req.MemberID, req.Generation, err)
	return resp
}
