package server

// ConsumerGroupHeartbeat (key 68), versions 0-1 (KIP-848).
//
// One request joins (MemberEpoch 0), leaves (-1; -2 is a static member's
// temporary leave: it keeps its place until its session ends, and a new
// member id with its instance id takes it over at epoch 0;
// coordinator/consumer_static.go) or heartbeats at the member's current
// epoch. The broker assigns: the coordinator's rules are
// in coordinator/consumer.go (docs/design.md section 9). v0 lets the broker
// make the member id of a join that sends none ("<client-id>-<sequence>",
// as for classic members); v1 (KIP-1082) has the client make it, and an
// empty one is INVALID_REQUEST, as Kafka 4 answers. v1 also adds
// SubscribedTopicRegex (RE2 syntax, matched against whole topic names at
// every heartbeat: coordinator/consumer_regex.go); an invalid one is
// INVALID_REGULAR_EXPRESSION, as Kafka 4 answers. The rack id and the
// rebalance timeout are read only to check them: no revocation waits
// here.
//
// Before the coordinator, the request's shape is checked in the order of
// Kafka 4's GroupCoordinatorService.throwIfConsumerGroupHeartbeatRequestIsInvalid,
// each failure INVALID_REQUEST with Kafka's message: a member id on v1, on
// a heartbeat and on a leave; a group id; no empty instance or rack id; a
// join with a rebalance timeout, an empty (not null) owned-partition list
// and a subscription; a static leave with an instance id; no epoch below
// -2 (one exception: epoch -2 without an instance id from a member that
// holds one is that member's temporary leave, since kgo sends it so;
// Kafka refuses it). Topic ids are the catalog's: the owned partitions a member reports
// are read only to tell a full request from a keepalive, and the
// assignment goes out by topic id.
//
// The response carries the member's whole assignment when the request was
// a full one (a join, or one that sets the rebalance timeout, the
// subscription and the owned partitions) or when the heartbeat moved the
// member's epoch or assignment, as Kafka's
// GroupMetadataManager.consumerGroupHeartbeat sends it; a keepalive at an
// unchanged epoch gets none. The heartbeat interval is the broker's
// (--consumer-heartbeat-interval), the session timeout too
// (--consumer-session-timeout).

import (
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/assignor"
	"github.com/minibroker/minibroker/coordinator"
)

func (s *Server) handleConsumerGroupHeartbeat(r *request, req *kmsg.ConsumerGroupHeartbeatRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.ConsumerGroupHeartbeatResponse)
	fail := func(err error) kmsg.Response {
		r.setCode(&resp.ErrorCode, s.code(err))
		msg := err.Error()
		resp.ErrorMessage = &msg
		s.fenced(r.logger, kmsg.ConsumerGroupHeartbeat, req.Group, req.MemberID, req.MemberEpoch, err)
		return resp
	}
	if req.MemberEpoch == coordinator.StaticLeaveEpoch && req.InstanceID == nil {
		// kgo's static leave names no instance id; the member id alone
		// names the static member (Kafka 4: INVALID_REQUEST).
		if id := s.coord.InstanceOf(req.Group, req.MemberID); id != "" {
			req.InstanceID = &id
		}
	}
	if err := checkConsumerHeartbeatShape(req); err != nil {
		return fail(err)
	}
	res, err := s.coord.ConsumerHeartbeat(coordinator.ConsumerHeartbeatRequest{
		Group:            req.Group,
		MemberID:         req.MemberID,
		MemberEpoch:      req.MemberEpoch,
		ClientID:         r.clientID,
		ClientHost:       r.host,
		InstanceID:       instanceID(req.InstanceID),
		GenerateMemberID: req.Version == 0,
		Topics:           req.SubscribedTopicNames,
		Assignor:         req.ServerAssignor,
		Regex:            req.SubscribedTopicRegex,
	})
	if err != nil {
		return fail(err)
	}
	resp.MemberID = &res.MemberID
	resp.MemberEpoch = res.MemberEpoch
	resp.HeartbeatIntervalMillis = int32(res.HeartbeatInterval.Milliseconds())
	full := req.MemberEpoch == coordinator.JoinEpoch ||
		req.RebalanceTimeoutMillis != -1 && (req.SubscribedTopicNames != nil || req.SubscribedTopicRegex != nil) && req.Topics != nil
	if req.MemberEpoch >= 0 && (full || res.Changed) {
		resp.Assignment = s.heartbeatAssignment(res.Assignment)
	}
	return resp
}

// checkConsumerHeartbeatShape applies Kafka's request checks, which need
// no group state. Each failure wraps kerr.InvalidRequest.
func checkConsumerHeartbeatShape(req *kmsg.ConsumerGroupHeartbeatRequest) error {
	invalid := func(msg string) error { return fmt.Errorf("%w: %s", kerr.InvalidRequest, msg) }
	blank := func(s *string) bool { return s != nil && strings.TrimSpace(*s) == "" }
	epoch := req.MemberEpoch
	if (req.Version >= 1 || epoch > 0 || epoch == coordinator.LeaveEpoch) && blank(&req.MemberID) {
		return invalid("MemberId can't be empty.")
	}
	if blank(&req.Group) {
		return invalid("GroupId can't be empty.")
	}
	if blank(req.InstanceID) {
		return invalid("InstanceId can't be empty.")
	}
	if blank(req.RackID) {
		return invalid("RackId can't be empty.")
	}
	switch {
	case epoch == coordinator.JoinEpoch:
		if req.RebalanceTimeoutMillis == -1 {
			return invalid("RebalanceTimeoutMs must be provided in first request.")
		}
		if req.Topics == nil || len(req.Topics) > 0 {
			return invalid("TopicPartitions must be empty when (re-)joining.")
		}
		if req.SubscribedTopicNames == nil && req.SubscribedTopicRegex == nil {
			return invalid("Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when (re-)joining.")
		}
	case epoch == coordinator.StaticLeaveEpoch:
		if req.InstanceID == nil {
			return invalid("InstanceId can't be null.")
		}
	case epoch < coordinator.StaticLeaveEpoch:
		return invalid("MemberEpoch is invalid.")
	}
	return nil
}

// heartbeatAssignment encodes an assignment by topic id. Every assigned
// topic is in the catalog (topics are never deleted), so none is dropped.
func (s *Server) heartbeatAssignment(parts []assignor.TopicPartition) *kmsg.ConsumerGroupHeartbeatResponseAssignment {
	out := &kmsg.ConsumerGroupHeartbeatResponseAssignment{Topics: []kmsg.ConsumerGroupHeartbeatResponseAssignmentTopic{}}
	for _, a := range s.assignmentByTopic(parts).TopicPartitions {
		out.Topics = append(out.Topics, kmsg.ConsumerGroupHeartbeatResponseAssignmentTopic{TopicID: a.TopicID, Partitions: a.Partitions})
	}
	return out
}

// assignmentByTopic groups sorted partitions by topic, with each topic's
// id from the catalog: the Assignment of ConsumerGroupDescribe, and the
// source of the heartbeat's.
func (s *Server) assignmentByTopic(parts []assignor.TopicPartition) kmsg.Assignment {
	out := kmsg.Assignment{TopicPartitions: []kmsg.AssignmentTopicPartition{}}
	for _, tp := range parts {
		n := len(out.TopicPartitions)
		if n == 0 || out.TopicPartitions[n-1].Topic != tp.Topic {
			t, _ := s.catalog.Lookup(tp.Topic)
			out.TopicPartitions = append(out.TopicPartitions, kmsg.AssignmentTopicPartition{TopicID: t.ID, Topic: tp.Topic})
			n++
		}
		out.TopicPartitions[n-1].Partitions = append(out.TopicPartitions[n-1].Partitions, tp.Partition)
	}
	return out
}
