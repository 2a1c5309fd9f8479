package integration

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/testkit/wiretest"
)

// kgoRequest sends req through a kgo client, which negotiates versions
// (ApiVersions v5, KIP-511 fallback to v4), finds the coordinator and the
// broker through FindCoordinator and Metadata, and routes the request.
func kgoRequest[R kmsg.Response](t *testing.T, cl *kgo.Client, req kmsg.Request) R {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
	defer cancel()
	resp, err := cl.Request(ctx, req)
	require.NoError(t, err, "%s", kmsg.NameForKey(req.Key()))
	typed, ok := resp.(R)
	require.True(t, ok, "response type %T", resp)
	return typed
}

// TestWireKgoRequests drives every group API through kgo.Client.Request
// with only a seed broker, and checks codes and values: what a kgo user
// of raw requests (or kadm) relies on.
func TestWireKgoRequests(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()))
	require.NoError(t, err)
	t.Cleanup(cl.Close)

	// FindCoordinator: this node, at its address.
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.CoordinatorKey = "g"
	fresp := kgoRequest[*kmsg.FindCoordinatorResponse](t, cl, fc)
	require.Len(t, fresp.Coordinators, 1, "kgo asks v4+ when the broker has it")
	assert.Equal(t, kmsg.FindCoordinatorResponseCoordinator{Key: "g", NodeID: 0, Host: "127.0.0.1", Port: b.port(t)}, fresp.Coordinators[0])

	// Metadata: the catalog and this broker.
	mresp := kgoRequest[*kmsg.MetadataResponse](t, cl, metadataRequest(12, nil))
	assert.Equal(t, []string{"orders:0:4", "payments:0:1"}, metadataTopics(mresp))
	assert.Equal(t, []kmsg.MetadataResponseBroker{{NodeID: 0, Host: "127.0.0.1", Port: b.port(t)}}, mresp.Brokers)
	require.NotNil(t, mresp.ClusterID)
	assert.Equal(t, "minibroker", *mresp.ClusterID)

	// CreateTopics: created, then TOPIC_ALREADY_EXISTS.
	ct := kgoRequest[*kmsg.CreateTopicsResponse](t, cl, createTopicsRequest(7, false, newTopic("events", 2, 1)))
	assert.Equal(t, codeNone, ct.Topics[0].ErrorCode)
	assert.Equal(t, int32(2), ct.Topics[0].NumPartitions)
	ct = kgoRequest[*kmsg.CreateTopicsResponse](t, cl, createTopicsRequest(7, false, newTopic("events", 2, 1)))
	assert.Equal(t, codeTopicAlreadyExists, ct.Topics[0].ErrorCode)

	// JoinGroup at kgo's version (v9): MEMBER_ID_REQUIRED, then joined.
	jreq := joinRequest(9, "g", "", "orders", "events")
	jresp := kgoRequest[*kmsg.JoinGroupResponse](t, cl, jreq)
	assert.Equal(t, codeMemberIDRequired, jresp.ErrorCode)
	assert.Equal(t, "kgo-000001", jresp.MemberID, "kgo's default client id")
	jreq = joinRequest(9, "g", "kgo-000001", "orders", "events")
	jresp = kgoRequest[*kmsg.JoinGroupResponse](t, cl, jreq)
	require.Equal(t, codeNone, jresp.ErrorCode)
	assert.Equal(t, int32(1), jresp.Generation)
	assert.Equal(t, "kgo-000001", jresp.LeaderID)
	require.NotNil(t, jresp.Protocol)
	assert.Equal(t, "roundrobin", *jresp.Protocol)
	require.Len(t, jresp.Members, 1)
	member, gen := jresp.MemberID, jresp.Generation

	// SyncGroup: the coordinator's assignment.
	sresp := kgoRequest[*kmsg.SyncGroupResponse](t, cl, wiretest.SyncRequest(5, "g", member, gen))
	require.Equal(t, codeNone, sresp.ErrorCode)
	assert.Equal(t, []string{"events-0", "events-1", "orders-0", "orders-1", "orders-2", "orders-3"}, wiretest.Assignment(t, sresp.MemberAssignment))
	sresp = kgoRequest[*kmsg.SyncGroupResponse](t, cl, wiretest.SyncRequest(5, "g", member, gen+1))
	assert.Equal(t, codeIllegalGeneration, sresp.ErrorCode)

	// Heartbeat: NONE, stale ILLEGAL_GENERATION, unknown UNKNOWN_MEMBER_ID.
	assert.Equal(t, codeNone, kgoRequest[*kmsg.HeartbeatResponse](t, cl, wiretest.HeartbeatRequest(4, "g", member, gen)).ErrorCode)
	assert.Equal(t, codeIllegalGeneration, kgoRequest[*kmsg.HeartbeatResponse](t, cl, wiretest.HeartbeatRequest(4, "g", member, gen+1)).ErrorCode)
	assert.Equal(t, codeUnknownMemberID, kgoRequest[*kmsg.HeartbeatResponse](t, cl, wiretest.HeartbeatRequest(4, "g", "kgo-999999", gen)).ErrorCode)

	// OffsetCommit: stored, then a stale commit rejected on every partition.
	creq := commitRequest(9, "g", member, gen, tp{"events", 1, 11}, tp{"orders", 2, 22})
	cresp := kgoRequest[*kmsg.OffsetCommitResponse](t, cl, creq)
	require.Len(t, cresp.Topics, 2)
	for _, rt := range cresp.Topics {
		for _, p := range rt.Partitions {
			assert.Equal(t, codeNone, p.ErrorCode, "%s-%d", rt.Topic, p.Partition)
		}
	}
	creq = commitRequest(9, "g", member, gen-1, tp{"events", 1, 99}, tp{"orders", 2, 99})
	cresp = kgoRequest[*kmsg.OffsetCommitResponse](t, cl, creq)
	for _, rt := range cresp.Topics {
		for _, p := range rt.Partitions {
			assert.Equal(t, codeIllegalGeneration, p.ErrorCode, "%s-%d", rt.Topic, p.Partition)
		}
	}

	// OffsetFetch: the committed offsets, -1 where there is none.
	ofreq := kmsg.NewPtrOffsetFetchRequest()
	ofreq.Groups = []kmsg.OffsetFetchRequestGroup{{Group: "g", Topics: []kmsg.OffsetFetchRequestGroupTopic{
		{Topic: "events", Partitions: []int32{0, 1}}, {Topic: "orders", Partitions: []int32{2}},
	}}}
	ofresp := kgoRequest[*kmsg.OffsetFetchResponse](t, cl, ofreq)
	require.Len(t, ofresp.Groups, 1)
	assert.Equal(t, codeNone, ofresp.Groups[0].ErrorCode)
	got := map[string]int64{}
	for _, f := range wiretest.FetchedGroupOffsets(ofresp.Groups[0].Topics) {
		assert.Equal(t, codeNone, f.ErrorCode)
		got[fmt.Sprintf("%s-%d", f.Topic, f.Partition)] = f.Offset
	}
	assert.Equal(t, map[string]int64{"events-0": -1, "events-1": 11, "orders-2": 22}, got)

	// DescribeGroups: Stable with the member.
	dreq := kmsg.NewPtrDescribeGroupsRequest()
	dreq.Groups = []string{"g", "nope"}
	dresp := kgoRequest[*kmsg.DescribeGroupsResponse](t, cl, dreq)
	states := map[string]string{}
	for _, g := range dresp.Groups {
		assert.Equal(t, codeNone, g.ErrorCode, g.Group)
		states[g.Group] = g.State
		if g.Group == "g" {
			require.Len(t, g.Members, 1)
			assert.Equal(t, member, g.Members[0].MemberID)
			assert.Equal(t, "kgo", g.Members[0].ClientID)
			assert.Equal(t, "/127.0.0.1", g.Members[0].ClientHost)
		}
	}
	assert.Equal(t, map[string]string{"g": "Stable", "nope": "Dead"}, states)

	// ListGroups: the group, Stable.
	lreq := kmsg.NewPtrListGroupsRequest()
	lresp := kgoRequest[*kmsg.ListGroupsResponse](t, cl, lreq)
	assert.Equal(t, codeNone, lresp.ErrorCode)
	require.Len(t, lresp.Groups, 1)
	assert.Equal(t, "g", lresp.Groups[0].Group)
	assert.Equal(t, "Stable", lresp.Groups[0].GroupState)
	assert.Equal(t, "consumer", lresp.Groups[0].ProtocolType)

	// LeaveGroup: NONE for the member and for an unknown one; the group
	// is then Empty.
	lvresp := kgoRequest[*kmsg.LeaveGroupResponse](t, cl, wiretest.LeaveRequest(5, "g", member, "kgo-999999"))
	assert.Equal(t, codeNone, lvresp.ErrorCode)
	require.Len(t, lvresp.Members, 2)
	assert.Equal(t, codeNone, lvresp.Members[0].ErrorCode)
	assert.Equal(t, codeNone, lvresp.Members[1].ErrorCode)
	dreq.Groups = []string{"g"}
	dresp = kgoRequest[*kmsg.DescribeGroupsResponse](t, cl, dreq)
	assert.Equal(t, "Empty", dresp.Groups[0].State)
	assert.Equal(t, codeUnknownMemberID, kgoRequest[*kmsg.HeartbeatResponse](t, cl, wiretest.HeartbeatRequest(4, "g", member, gen+1)).ErrorCode)
}
