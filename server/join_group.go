package server

// JoinGroup (key 11), versions 0-9.
//
// v1 adds the rebalance timeout (ignored: no join barrier waits here); v4
// (KIP-394) answers an empty member id with MEMBER_ID_REQUIRED and a new
// id; v5 adds group instance ids (KIP-345 static membership: such a member
// joins at once, and a restart under the same instance id takes the old
// member's place; coordinator/static.go); v6 is flexible; v7 echoes the
// protocol type and name; v8 adds a reason; v9 adds SkipAssignment, always
// false, since the coordinator, not the leader, assigns.
//
// The join completes at once (the chapter's synchronous rebalance); the
// rules and their order are docs/design.md section 4's, applied by
// coordinator.Join with WireRules. The limits come with them
// (docs/reliability.md): an over-long or non-text group id is
// INVALID_GROUP_ID, an over-long or non-text member or client id
// INVALID_REQUEST, a subscription to a name that cannot be a topic
// INVALID_TOPIC_EXCEPTION, a new member of a full group
// GROUP_MAX_SIZE_REACHED (with an empty member id, as Kafka), and a new
// group beyond the group limit POLICY_VIOLATION.

import (
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/coordinator"
)

func (s *Server) handleJoinGroup(r *request, req *kmsg.JoinGroupRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.JoinGroupResponse)
	// The leader's answer lists every member's metadata.
	if !r.reserve(s.coord.DescribeBytes(req.Group) + int64(len(req.Protocols))*smallFrameBytes) {
		return resp
	}
	jr := coordinator.JoinRequest{
		Group:           req.Group,
		MemberID:        req.MemberID,
		InstanceID:      instanceID(req.InstanceID),
		ClientID:        r.clientID,
		ClientHost:      r.host,
		SessionTimeout:  time.Duration(req.SessionTimeoutMillis) * time.Millisecond,
		ProtocolType:    req.ProtocolType,
		WireRules:       true,
		RequireMemberID: req.Version >= 4,
	}
	for _, p := range req.Protocols {
		jr.Protocols = append(jr.Protocols, coordinator.Protocol{
			Name: p.Name, Metadata: p.Metadata, Topics: subscribedTopics(p.Metadata),
		})
	}
	res, err := s.coord.Join(jr)
	if err != nil {
		r.setCode(&resp.ErrorCode, s.code(err))
		resp.Generation = -1
		resp.MemberID = req.MemberID
		if errors.Is(err, coordinator.ErrMemberIDRequired) {
			resp.MemberID = res.MemberID
		}
		if errors.Is(err, coordinator.ErrInconsistentGroupProtocol) || errors.Is(err, coordinator.ErrGroupMaxSizeReached) {
			resp.MemberID = "" // as Kafka answers both
		}
		s.fenced(r.logger, kmsg.JoinGroup, req.Group, req.MemberID, -1, err)
		if errors.Is(err, coordinator.ErrUnknownTopic) {
			s.joinRefused(r, req.Group, req.MemberID, jr.Protocols, err)
		}
		return resp
	}
	protocolType, protocolName := coordinator.ConsumerProtocolType, res.Protocol
	resp.Generation = res.Generation
	resp.ProtocolType = &protocolType
	resp.Protocol = &protocolName
	resp.LeaderID = res.Leader
	resp.MemberID = res.MemberID
	for _, m := range res.Members {
		resp.Members = append(resp.Members, kmsg.JoinGroupResponseMember{MemberID: m.MemberID, ProtocolMetadata: m.Metadata})
	}
	return resp
}

// instanceID returns a request's group instance id, "" when it names none
// (null, or a version before instance ids).
func instanceID(id *string) string {
	if id == nil {
		return ""
	}
	return *id
}

// subscribedTopics reads the topic list of a ConsumerMemberMetadata
// leniently: the version, then the topics, ignoring whatever follows, since
// some clients send less than their version implies. Metadata that does
// not hold a topic list subscribes to nothing.
func subscribedTopics(metadata []byte) []string {
	r := kbin.Reader{Src: metadata}
	r.Int16() // version
	n := r.ArrayLen()
	if !r.Ok() || n < 0 || int(n) > len(r.Src) {
		return nil
	}
	topics := make([]string, 0, n)
	for range n {
		t := r.String()
		if !r.Ok() {
			return nil
		}
		topics = append(topics, t)
	}
	return topics
}
