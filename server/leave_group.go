package server

// LeaveGroup (key 13), versions 0-5.
//
// v0-2 name one member and answer only a top-level code; v3 (KIP-345)
// batches members and answers one code each; v4 is flexible; v5 adds a
// reason. An empty, over-long or non-text group id is INVALID_GROUP_ID. A
// leave of an unknown member or group is NONE, as the chapter's
// idempotent leave (Kafka answers UNKNOWN_MEMBER_ID). The members that did
// leave cause one rebalance.

import (
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (s *Server) handleLeaveGroup(r *request, req *kmsg.LeaveGroupRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.LeaveGroupResponse)
	if err := s.coord.ValidateGroupID(req.Group); err != nil {
		r.setCode(&resp.ErrorCode, s.code(err))
		return resp
	}
	if req.Version < 3 {
		s.coord.Leave(req.Group, req.MemberID)
		return resp
	}
	ids := make([]string, len(req.Members))
	for i, m := range req.Members {
		ids[i] = m.MemberID
		resp.Members = append(resp.Members, kmsg.LeaveGroupResponseMember{MemberID: m.MemberID, InstanceID: m.InstanceID})
	}
	if left := s.coord.Leave(req.Group, ids...); len(left) > 0 {
		r.logger.Info("members left", "group", req.Group, "member", left)
	}
	return resp
}
