package server

// DescribeGroups (key 15), versions 0-5.
//
// v1 adds throttle; v3 authorized operations (we report none); v4 instance
// ids (a static member's; null for a dynamic one); v5 is flexible. An
// unknown group is "Dead" with NONE,
// as Kafka answers before v6. A Stable group lists its members with their
// metadata for the chosen protocol and their encoded assignment. A consumer
// (KIP-848) group is not a classic group, so it is "Dead" with no members
// and no protocol type too, as Kafka 4's GroupMetadataManager.describeGroups
// answers (v6+ would say GROUP_ID_NOT_FOUND); ConsumerGroupDescribe
// describes it.

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/coordinator"
	"github.com/minibroker/minibroker/protocol"
)

func (s *Server) handleDescribeGroups(r *request, req *kmsg.DescribeGroupsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.DescribeGroupsResponse)
	if !r.reserve(s.coord.DescribeBytes(req.Groups...)) {
		return resp
	}
	for _, id := range req.Groups {
		v, _ := s.coord.Describe(id)
		if v.Type == coordinator.ConsumerGroup {
			v = coordinator.GroupView{Group: id, State: coordinator.Dead}
		}
		g := kmsg.DescribeGroupsResponseGroup{Group: id, State: v.State.String(), Protocol: v.Protocol, AuthorizedOperations: -2147483648}
		if v.State != coordinator.Dead {
			g.ProtocolType = coordinator.ConsumerProtocolType
		}
		for _, m := range v.Members {
			var instance *string
			if m.InstanceID != "" {
				instance = &m.InstanceID
			}
			g.Members = append(g.Members, kmsg.DescribeGroupsResponseGroupMember{
				MemberID:         m.MemberID,
				InstanceID:       instance,
				ClientID:         m.ClientID,
				ClientHost:       m.ClientHost,
				ProtocolMetadata: m.Metadata,
				MemberAssignment: protocol.EncodeAssignment(m.Assignment),
			})
		}
		resp.Groups = append(resp.Groups, g)
	}
	return resp
}
