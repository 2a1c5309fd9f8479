package wiretest

import (
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// The group requests every wire test builds, as a consumer sends them.

// ConsumerMetadata encodes a ConsumerMemberMetadata of version subscribing
// to topics: a JoinGroup protocol's metadata.
func ConsumerMetadata(version int16, topics ...string) []byte {
	m := kmsg.NewConsumerMemberMetadata()
	m.Version = version
	m.Topics = topics
	return m.AppendTo(nil)
}

// JoinRequest is a consumer JoinGroup at version with one "roundrobin"
// protocol subscribing to topics (ConsumerMemberMetadata v0), and session
// as both the session and the rebalance timeout. An empty member asks for
// a new id.
func JoinRequest(version int16, group, member string, session time.Duration, topics ...string) *kmsg.JoinGroupRequest {
	req := kmsg.NewPtrJoinGroupRequest()
	req.Version, req.Group, req.MemberID = version, group, member
	req.SessionTimeoutMillis = int32(session / time.Millisecond)
	req.RebalanceTimeoutMillis = req.SessionTimeoutMillis
	req.ProtocolType = "consumer"
	req.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "roundrobin", Metadata: ConsumerMetadata(0, topics...)}}
	return req
}

// SyncRequest is a SyncGroup at version for member of generation, with no
// plan (what a follower sends).
func SyncRequest(version int16, group, member string, generation int32) *kmsg.SyncGroupRequest {
	req := kmsg.NewPtrSyncGroupRequest()
	req.Version, req.Group, req.MemberID, req.Generation = version, group, member, generation
	return req
}

// HeartbeatRequest is a Heartbeat at version for member of generation.
func HeartbeatRequest(version int16, group, member string, generation int32) *kmsg.HeartbeatRequest {
	req := kmsg.NewPtrHeartbeatRequest()
	req.Version, req.Group, req.MemberID, req.Generation = version, group, member, generation
	return req
}

// LeaveRequest is a LeaveGroup at version for members: before v3 the
// first member alone (the request's MemberID), from v3 the batch.
func LeaveRequest(version int16, group string, members ...string) *kmsg.LeaveGroupRequest {
	req := kmsg.NewPtrLeaveGroupRequest()
	req.Version, req.Group = version, group
	if version < 3 {
		if len(members) > 0 {
			req.MemberID = members[0]
		}
		return req
	}
	for _, m := range members {
		req.Members = append(req.Members, kmsg.LeaveGroupRequestMember{MemberID: m})
	}
	return req
}
