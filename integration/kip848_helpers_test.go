package integration

// What the KIP-848 tests (kip848_*_test.go) need beyond the package's
// helpers (helpers_test.go: startBroker, commitRequest, fetchOffsets,
// eventually; testkit/wiretest: Dial, Do, Commit): ConsumerGroupHeartbeat requests as kgo sends
// them, topic ids from Metadata, and assignments read back by topic id.

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/coordinator"
	"github.com/minibroker/minibroker/testkit/wiretest"
	"github.com/minibroker/minibroker/wireclient"
)

// k848Heartbeat is a full ConsumerGroupHeartbeat as kgo sends it: the
// rebalance timeout, the server assignor, the subscription and the
// partitions owned (none).
func k848Heartbeat(version int16, group, member string, epoch int32, assignor string, topics ...string) *kmsg.ConsumerGroupHeartbeatRequest {
	req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	req.Version, req.Group, req.MemberID, req.MemberEpoch = version, group, member, epoch
	req.RebalanceTimeoutMillis = 60000
	req.ServerAssignor = &assignor
	req.SubscribedTopicNames = append([]string{}, topics...)
	req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	return req
}

// k848Keepalive is a heartbeat that repeats nothing, as kgo sends between
// changes.
func k848Keepalive(group, member string, epoch int32) *kmsg.ConsumerGroupHeartbeatRequest {
	req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	req.Version, req.Group, req.MemberID, req.MemberEpoch = 1, group, member, epoch
	return req
}

// k848Leave is a ConsumerGroupHeartbeat with epoch -1.
func k848Leave(group, member string) *kmsg.ConsumerGroupHeartbeatRequest {
	return k848Keepalive(group, member, coordinator.LeaveEpoch)
}

// k848Join joins member to group with the given assignor; it must succeed.
func k848Join(t *testing.T, c *wireclient.Client, group, member, assignor string, topics ...string) *kmsg.ConsumerGroupHeartbeatResponse {
	t.Helper()
	resp := wiretest.Do[*kmsg.ConsumerGroupHeartbeatResponse](t, c, k848Heartbeat(1, group, member, 0, assignor, topics...))
	require.Zero(t, resp.ErrorCode, "join %s/%s: %v", group, member, resp.ErrorMessage)
	return resp
}

// k848TopicIDs asks Metadata v12 for every topic's id.
func k848TopicIDs(t *testing.T, c *wireclient.Client) map[string][16]byte {
	t.Helper()
	req := kmsg.NewPtrMetadataRequest()
	req.Version = 12
	resp := wiretest.Do[*kmsg.MetadataResponse](t, c, req)
	out := map[string][16]byte{}
	for _, topic := range resp.Topics {
		require.Zero(t, topic.ErrorCode)
		out[*topic.Topic] = topic.TopicID
	}
	return out
}

// k848Parts flattens a heartbeat's assignment to "topic" -> partitions,
// naming each topic by the id Metadata gave it.
func k848Parts(t *testing.T, ids map[string][16]byte, a *kmsg.ConsumerGroupHeartbeatResponseAssignment) map[string][]int32 {
	t.Helper()
	require.NotNil(t, a, "the response carries the assignment")
	byID := map[[16]byte]string{}
	for name, id := range ids {
		byID[id] = name
	}
	out := map[string][]int32{}
	for _, topic := range a.Topics {
		name, ok := byID[topic.TopicID]
		require.True(t, ok, "topic id %x is one Metadata returned", topic.TopicID)
		out[name] = topic.Partitions
	}
	return out
}

// k848Orders is offset 100+p of each partition p of orders, what the
// KIP-848 tests commit (commitRequest) and read back (fetchOffsets).
func k848Orders(partitions ...int32) []tp {
	out := make([]tp, len(partitions))
	for i, p := range partitions {
		out[i] = tp{"orders", p, 100 + int64(p)}
	}
	return out
}
