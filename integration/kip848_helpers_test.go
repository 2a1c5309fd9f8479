package integration

// Helpers of the KIP-848 tests (kip848_*_test.go): a broker from the
// broker package, raw kmsg clients on it, ConsumerGroupHeartbeat requests
// as kgo sends them, and polling with a deadline. Every name starts with
// k848 so that none clashes with the other integration helpers; the broker
// package is imported as mbroker for the same reason.

import (
	"context"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	mbroker "github.com/minibroker/minibroker/broker"
	"github.com/minibroker/minibroker/coordinator"
	"github.com/minibroker/minibroker/protocol"
)

// k848Wait bounds every wait on the network or on a poll.
const k848Wait = 15 * time.Second

// k848Topics are the chapter's topics.
func k848Topics() map[string]int32 { return map[string]int32{"orders": 4, "payments": 1} }

// k848Start starts a broker with cfg, the chapter's topics unless cfg
// names some, and closes it at cleanup. Its context outlives the test's,
// which ends before cleanup, so that clients closed at cleanup (registered
// later, so closed earlier) still reach it to leave.
func k848Start(t *testing.T, cfg mbroker.Config) *mbroker.Broker {
	t.Helper()
	if cfg.Topics == nil {
		cfg.Topics = k848Topics()
	}
	b, err := mbroker.Start(context.WithoutCancel(t.Context()), cfg)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, b.Close()) })
	return b
}

// k848Dial opens a raw kmsg connection to b, closed at cleanup.
func k848Dial(t *testing.T, b *mbroker.Broker, clientID string) *protocol.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), k848Wait)
	defer cancel()
	c, err := protocol.Dial(ctx, b.Addr(), clientID)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

// k848Do sends req and returns its response, which must come.
func k848Do[R kmsg.Response](t *testing.T, c *protocol.Client, req kmsg.Request) R {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), k848Wait)
	defer cancel()
	resp, err := c.Request(ctx, req)
	require.NoError(t, err)
	return resp.(R)
}

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
func k848Join(t *testing.T, c *protocol.Client, group, member, assignor string, topics ...string) *kmsg.ConsumerGroupHeartbeatResponse {
	t.Helper()
	resp := k848Do[*kmsg.ConsumerGroupHeartbeatResponse](t, c, k848Heartbeat(1, group, member, 0, assignor, topics...))
	require.Zero(t, resp.ErrorCode, "join %s/%s: %v", group, member, resp.ErrorMessage)
	return resp
}

// k848TopicIDs asks Metadata v12 for every topic's id.
func k848TopicIDs(t *testing.T, c *protocol.Client) map[string][16]byte {
	t.Helper()
	req := kmsg.NewPtrMetadataRequest()
	req.Version = 12
	resp := k848Do[*kmsg.MetadataResponse](t, c, req)
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

// k848Commit is an OffsetCommit of offset 100+p for each partition p of
// orders, at version with generation (a member epoch from v9).
func k848Commit(version int16, group, member string, generation int32, partitions ...int32) *kmsg.OffsetCommitRequest {
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Version, req.Group, req.MemberID, req.Generation = version, group, member, generation
	topic := kmsg.OffsetCommitRequestTopic{Topic: "orders"}
	for _, p := range partitions {
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset = p, 100+int64(p)
		topic.Partitions = append(topic.Partitions, rp)
	}
	req.Topics = []kmsg.OffsetCommitRequestTopic{topic}
	return req
}

// k848CommitCodes sends a commit and returns its codes, checking that the
// response names every requested partition.
func k848CommitCodes(t *testing.T, c *protocol.Client, req *kmsg.OffsetCommitRequest) []int16 {
	t.Helper()
	resp := k848Do[*kmsg.OffsetCommitResponse](t, c, req)
	require.Len(t, resp.Topics, 1)
	require.Len(t, resp.Topics[0].Partitions, len(req.Topics[0].Partitions))
	var codes []int16
	for _, p := range resp.Topics[0].Partitions {
		codes = append(codes, p.ErrorCode)
	}
	return codes
}

// k848Committed reads group's committed offsets of orders with OffsetFetch.
func k848Committed(t *testing.T, c *protocol.Client, group string) map[int32]int64 {
	t.Helper()
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Version, req.Group = 7, group
	req.Topics = []kmsg.OffsetFetchRequestTopic{{Topic: "orders", Partitions: []int32{0, 1, 2, 3}}}
	resp := k848Do[*kmsg.OffsetFetchResponse](t, c, req)
	out := map[int32]int64{}
	for _, topic := range resp.Topics {
		for _, p := range topic.Partitions {
			if p.Offset >= 0 {
				out[p.Partition] = p.Offset
			}
		}
	}
	return out
}

// k848Repeat is n copies of code.
func k848Repeat(code int16, n int) []int16 { return slices.Repeat([]int16{code}, n) }

// k848Eventually polls cond every 10 ms until it holds, failing the test
// with msg after k848Wait.
func k848Eventually(t *testing.T, cond func() bool, msg string, args ...any) {
	t.Helper()
	deadline := time.Now().Add(k848Wait)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after %v: "+msg, append([]any{k848Wait}, args...)...)
		}
		select {
		case <-t.Context().Done():
			t.Fatal(t.Context().Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// k848SortedKeys is the sorted keys of m.
func k848SortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }
