package server

// LeaveGroup (key 13), versions 0-5.
//
// v0-2 name one member and answer only a top-level code; v3 (KIP-345)
// batches members and answers one code each; v4 is flexible; v5 adds a
// reason. v3+ members may be named by instance id (KIP-345): an empty
// member id finds the instance's member, and a member id the instance does
// not hold is FENCED_INSTANCE_ID for that member, which stays. An empty,
// over-long or non-text group id is INVALID_GROUP_ID. A
// leave of an unknown member or group is NONE, as the chapter's
// idempotent leave (Kafka answers UNKNOWN_MEMBER_ID). The members that did
// leave cause one rebalance.

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/coordinator"
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
	ms := make([]coordinator.LeaveMember, len(req.Members))
	for i, m := range req.Members {
		ms[i] = coordinator.LeaveMember{MemberID: m.MemberID, InstanceID: instanceID(m.InstanceID)}
	}
	left, errs := s.coord.LeaveMembers(req.Group, ms)
	var gone []string
	for i, m := range req.Members {
		rm := kmsg.LeaveGroupResponseMember{MemberID: m.MemberID, InstanceID: m.InstanceID}
		if left[i] != "" {
			rm.MemberID = left[i] // the member an instance id named
			gone = append(gone, left[i])
		}
		r.setCode(&rm.ErrorCode, s.code(errs[i]))
		s.fenced(r.logger, kmsg.LeaveGroup, req.Group, m.MemberID, -1, errs[i])
		resp.Members = append(resp.Members, rm)
	}
	if len(gone) > 0 {
		r.logger.Info("members left", "group", req.Group, "member", gone)
	}
	return resp
}
