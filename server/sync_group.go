package server

// SyncGroup (key 14), versions 0-5.
//
// The leader's plan is ignored: the coordinator computed every assignment
// at join, and each member gets its own share, encoded as a
// ConsumerMemberAssignment (never zero bytes, even when it holds no
// partition, so clients never mistake it for "no assignment yet"). The ids
// are checked first, as for Heartbeat. v3 adds instance ids: a member id the
// instance no longer holds is FENCED_INSTANCE_ID, before any other check; v4
// is flexible; v5 names the protocol type and name, which must be the
// group's when given (INCONSISTENT_GROUP_PROTOCOL, as Kafka), and are
// echoed back (null stays null; Kafka fills in the group's).

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/coordinator"
	"github.com/minibroker/minibroker/protocol"
)

func (s *Server) handleSyncGroup(r *request, req *kmsg.SyncGroupRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.SyncGroupResponse)
	name := ""
	if req.Protocol != nil {
		name = *req.Protocol
	}
	parts, err := s.coord.SyncInstance(req.Group, req.MemberID, instanceID(req.InstanceID), req.Generation, name)
	if err == nil && req.ProtocolType != nil && *req.ProtocolType != coordinator.ConsumerProtocolType {
		err = fmt.Errorf("%w: protocol type %q", coordinator.ErrInconsistentGroupProtocol, *req.ProtocolType)
	}
	if err != nil {
		r.setCode(&resp.ErrorCode, s.code(err))
		s.fenced(r.logger, kmsg.SyncGroup, req.Group, req.MemberID, req.Generation, err)
		return resp
	}
	resp.ProtocolType, resp.Protocol = req.ProtocolType, req.Protocol // checked equal to the group's
	resp.MemberAssignment = protocol.EncodeAssignment(parts)
	return resp
}
