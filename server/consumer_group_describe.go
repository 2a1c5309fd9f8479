package server

// ConsumerGroupDescribe (key 69), versions 0-1 (KIP-848).
//
// Describes consumer (KIP-848) groups as Kafka's ConsumerGroup
// .asDescribedGroup does: the state (Empty, Reconciling or Stable; Kafka's
// Assigning is never seen, since the target is computed with every epoch
// bump), the group epoch, the assignment epoch (always the group epoch
// here), the server assignor, and per member its epoch, client id and
// host, instance id (a static member's), subscribed topic names, current
// assignment and target assignment,
// each topic by id and by name (Kafka fills both; kfake only the id). A
// group that does not exist, or is not a consumer group (a classic group,
// or one known only by its committed offsets), is GROUP_ID_NOT_FOUND, as
// Kafka's GroupMetadataManager.consumerGroupDescribe answers. v1 adds the
// member type (1, consumer: no classic members here) and the subscribed
// regex (a member's pattern, null for none). Authorized operations are not reported.

import (
	"math"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/coordinator"
)

// consumerMemberType is ConsumerGroupDescribe v1's MemberType of a member
// that speaks the consumer protocol (0 would be a classic member).
const consumerMemberType = 1

func (s *Server) handleConsumerGroupDescribe(r *request, req *kmsg.ConsumerGroupDescribeRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.ConsumerGroupDescribeResponse)
	if !r.reserve(2 * s.coord.DescribeBytes(req.Groups...)) { // current and target assignments
		return resp
	}
	for _, id := range req.Groups {
		g := kmsg.NewConsumerGroupDescribeResponseGroup()
		g.Group = id
		g.AuthorizedOperations = math.MinInt32
		v, ok := s.coord.Describe(id)
		if !ok || v.Type != coordinator.ConsumerGroup {
			r.setCode(&g.ErrorCode, kerr.GroupIDNotFound.Code)
			msg := "Group " + id + " is not a consumer group."
			g.ErrorMessage = &msg
			resp.Groups = append(resp.Groups, g)
			continue
		}
		g.State = v.State.String()
		g.Epoch = v.Generation
		g.AssignmentEpoch = v.AssignmentEpoch
		g.AssignorName = v.Assignor
		for _, m := range v.Members {
			gm := kmsg.NewConsumerGroupDescribeResponseGroupMember()
			gm.MemberID = m.MemberID
			if m.InstanceID != "" {
				gm.InstanceID = &m.InstanceID
			}
			gm.MemberEpoch = m.MemberEpoch
			gm.ClientID = m.ClientID
			gm.ClientHost = m.ClientHost
			gm.SubscribedTopics = append([]string{}, m.Topics...)
			if m.Regex != "" {
				gm.SubscribedTopicRegex = &m.Regex
			}
			gm.Assignment = s.assignmentByTopic(m.Assignment)
			gm.TargetAssignment = s.assignmentByTopic(m.TargetAssignment)
			gm.MemberType = consumerMemberType
			g.Members = append(g.Members, gm)
		}
		resp.Groups = append(resp.Groups, g)
	}
	return resp
}
