package integration

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/protocol"
	"github.com/minibroker/minibroker/testkit/wiretest"
	"github.com/minibroker/minibroker/wireclient"
)

// versionCase drives one API at version v on c and checks a sensible,
// error-free answer. group is a group name no other case uses.
type versionCase func(t *testing.T, c *wireclient.Client, v int16, group string)

// joinAt joins group with a fresh member at JoinGroup v3 (one round trip).
func joinAt(t *testing.T, c *wireclient.Client, group string, topics ...string) *kmsg.JoinGroupResponse {
	t.Helper()
	resp := wiretest.Do[*kmsg.JoinGroupResponse](t, c, joinRequest(3, group, "", topics...))
	require.Equal(t, codeNone, resp.ErrorCode)
	return resp
}

var versionCases = map[kmsg.Key]versionCase{
	kmsg.ApiVersions: func(t *testing.T, c *wireclient.Client, v int16, _ string) {
		resp := wiretest.Do[*kmsg.ApiVersionsResponse](t, c, apiVersionsRequest(v))
		assert.Equal(t, codeNone, resp.ErrorCode)
		assert.Len(t, resp.ApiKeys, len(protocol.SupportedVersions()))
	},
	kmsg.Metadata: func(t *testing.T, c *wireclient.Client, v int16, _ string) {
		resp := wiretest.Do[*kmsg.MetadataResponse](t, c, metadataRequest(v, []string{"orders"}))
		assert.Equal(t, []string{"orders:0:4"}, metadataTopics(resp))
		assert.Len(t, resp.Brokers, 1)
	},
	kmsg.FindCoordinator: func(t *testing.T, c *wireclient.Client, v int16, group string) {
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.Version, req.CoordinatorKey, req.CoordinatorKeys = v, group, []string{group}
		resp := wiretest.Do[*kmsg.FindCoordinatorResponse](t, c, req)
		if v < 4 {
			assert.Equal(t, codeNone, resp.ErrorCode)
			assert.Equal(t, "127.0.0.1", resp.Host)
			return
		}
		require.Len(t, resp.Coordinators, 1)
		assert.Equal(t, group, resp.Coordinators[0].Key)
		assert.Equal(t, codeNone, resp.Coordinators[0].ErrorCode)
	},
	kmsg.JoinGroup: func(t *testing.T, c *wireclient.Client, v int16, group string) {
		resp := wiretest.Do[*kmsg.JoinGroupResponse](t, c, joinRequest(v, group, "", "orders"))
		if v >= 4 {
			require.Equal(t, codeMemberIDRequired, resp.ErrorCode)
			resp = wiretest.Do[*kmsg.JoinGroupResponse](t, c, joinRequest(v, group, resp.MemberID, "orders"))
		}
		assert.Equal(t, codeNone, resp.ErrorCode)
		assert.Equal(t, int32(1), resp.Generation)
		assert.Equal(t, resp.MemberID, resp.LeaderID)
	},
	kmsg.SyncGroup: func(t *testing.T, c *wireclient.Client, v int16, group string) {
		j := joinAt(t, c, group, "orders")
		resp := wiretest.Do[*kmsg.SyncGroupResponse](t, c, wiretest.SyncRequest(v, group, j.MemberID, j.Generation))
		assert.Equal(t, codeNone, resp.ErrorCode)
		assert.Equal(t, []string{"orders-0", "orders-1", "orders-2", "orders-3"}, wiretest.Assignment(t, resp.MemberAssignment))
	},
	kmsg.Heartbeat: func(t *testing.T, c *wireclient.Client, v int16, group string) {
		j := joinAt(t, c, group, "orders")
		resp := wiretest.Do[*kmsg.HeartbeatResponse](t, c, wiretest.HeartbeatRequest(v, group, j.MemberID, j.Generation))
		assert.Equal(t, codeNone, resp.ErrorCode)
	},
	kmsg.LeaveGroup: func(t *testing.T, c *wireclient.Client, v int16, group string) {
		j := joinAt(t, c, group, "orders")
		resp := wiretest.Do[*kmsg.LeaveGroupResponse](t, c, wiretest.LeaveRequest(v, group, j.MemberID))
		assert.Equal(t, codeNone, resp.ErrorCode)
		if v >= 3 {
			require.Len(t, resp.Members, 1)
			assert.Equal(t, j.MemberID, resp.Members[0].MemberID)
		}
		assert.Equal(t, "Empty", describe(t, c, group)[0].State)
	},
	kmsg.OffsetCommit: func(t *testing.T, c *wireclient.Client, v int16, group string) {
		req := commitRequest(v, group, "", -1, tp{"orders", 1, 41})
		if v > 0 {
			j := joinAt(t, c, group, "orders")
			req = commitRequest(v, group, j.MemberID, j.Generation, tp{"orders", 1, 41})
		}
		assert.Equal(t, []int16{0}, wiretest.Commit(t, c, req))
		assert.Equal(t, map[string]int64{"orders-1": 41}, fetchOffsets(t, c, group, tp{"orders", 1, 0}))
	},
	kmsg.OffsetFetch: func(t *testing.T, c *wireclient.Client, v int16, group string) {
		require.Equal(t, []int16{0}, commit(t, c, group, "", -1, tp{"payments", 0, 7}))
		req := kmsg.NewPtrOffsetFetchRequest()
		req.Version = v
		if v < 8 {
			req.Group = group
			req.Topics = []kmsg.OffsetFetchRequestTopic{{Topic: "payments", Partitions: []int32{0}}}
			resp := wiretest.Do[*kmsg.OffsetFetchResponse](t, c, req)
			assert.Equal(t, []wiretest.Offset{{Topic: "payments", Partition: 0, Offset: 7, LeaderEpoch: -1, Metadata: "", ErrorCode: 0}}, wiretest.FetchedOffsets(resp.Topics))
			return
		}
		req.Groups = []kmsg.OffsetFetchRequestGroup{{Group: group, Topics: []kmsg.OffsetFetchRequestGroupTopic{{Topic: "payments", Partitions: []int32{0}}}}}
		resp := wiretest.Do[*kmsg.OffsetFetchResponse](t, c, req)
		require.Len(t, resp.Groups, 1)
		assert.Equal(t, []wiretest.Offset{{Topic: "payments", Partition: 0, Offset: 7, LeaderEpoch: -1, Metadata: "", ErrorCode: 0}}, wiretest.FetchedGroupOffsets(resp.Groups[0].Topics))
	},
	kmsg.DescribeGroups: func(t *testing.T, c *wireclient.Client, v int16, group string) {
		j := joinAt(t, c, group, "orders")
		req := kmsg.NewPtrDescribeGroupsRequest()
		req.Version, req.Groups = v, []string{group}
		resp := wiretest.Do[*kmsg.DescribeGroupsResponse](t, c, req)
		require.Len(t, resp.Groups, 1)
		g := resp.Groups[0]
		assert.Equal(t, codeNone, g.ErrorCode)
		assert.Equal(t, "Stable", g.State)
		require.Len(t, g.Members, 1)
		assert.Equal(t, j.MemberID, g.Members[0].MemberID)
	},
	kmsg.ListGroups: func(t *testing.T, c *wireclient.Client, v int16, group string) {
		joinAt(t, c, group, "orders")
		req := kmsg.NewPtrListGroupsRequest()
		req.Version = v
		resp := wiretest.Do[*kmsg.ListGroupsResponse](t, c, req)
		assert.Equal(t, codeNone, resp.ErrorCode)
		var names []string
		for _, g := range resp.Groups {
			names = append(names, g.Group)
		}
		assert.Contains(t, names, group)
	},
	kmsg.CreateTopics: func(t *testing.T, c *wireclient.Client, v int16, group string) {
		resp := wiretest.Do[*kmsg.CreateTopicsResponse](t, c, createTopicsRequest(v, false, newTopic(group, 2, 1)))
		require.Len(t, resp.Topics, 1)
		assert.Equal(t, codeNone, resp.Topics[0].ErrorCode)
		md := wiretest.Do[*kmsg.MetadataResponse](t, c, metadataRequest(12, []string{group}))
		assert.Equal(t, []string{group + ":0:2"}, metadataTopics(md))
	},
	kmsg.ListOffsets: func(t *testing.T, c *wireclient.Client, v int16, group string) {
		ensureTopic(t, c, group)
		produceValues(t, c, group, 0, "a", "b")
		req := kmsg.NewPtrListOffsetsRequest()
		req.Version, req.ReplicaID = v, -1
		req.Topics = []kmsg.ListOffsetsRequestTopic{{Topic: group, Partitions: []kmsg.ListOffsetsRequestTopicPartition{{Partition: 0, Timestamp: -1, MaxNumOffsets: 1}}}}
		resp := wiretest.Do[*kmsg.ListOffsetsResponse](t, c, req)
		require.Len(t, resp.Topics, 1)
		p := resp.Topics[0].Partitions[0]
		assert.Equal(t, codeNone, p.ErrorCode)
		if v == 0 {
			assert.Equal(t, []int64{2}, p.OldStyleOffsets, "latest: after the two records")
		} else {
			assert.Equal(t, int64(2), p.Offset, "latest: after the two records")
		}
	},
	kmsg.ConsumerGroupHeartbeat: func(t *testing.T, c *wireclient.Client, v int16, group string) {
		req := k848Heartbeat(v, group, "", 0, "", "orders")
		if v >= 1 {
			req.MemberID = "member-" + group
		}
		resp := wiretest.Do[*kmsg.ConsumerGroupHeartbeatResponse](t, c, req)
		require.Equal(t, codeNone, resp.ErrorCode)
		assert.Equal(t, int32(1), resp.MemberEpoch)
		require.NotNil(t, resp.Assignment)
		require.Len(t, resp.Assignment.Topics, 1)
		assert.Equal(t, []int32{0, 1, 2, 3}, resp.Assignment.Topics[0].Partitions)
	},
	kmsg.ConsumerGroupDescribe: func(t *testing.T, c *wireclient.Client, v int16, group string) {
		wiretest.Do[*kmsg.ConsumerGroupHeartbeatResponse](t, c, k848Heartbeat(1, group, "m-"+group, 0, "", "orders"))
		req := kmsg.NewPtrConsumerGroupDescribeRequest()
		req.Version, req.Groups = v, []string{group}
		resp := wiretest.Do[*kmsg.ConsumerGroupDescribeResponse](t, c, req)
		require.Len(t, resp.Groups, 1)
		g := resp.Groups[0]
		assert.Equal(t, codeNone, g.ErrorCode)
		assert.Equal(t, int32(1), g.Epoch)
		require.Len(t, g.Members, 1)
		assert.Equal(t, "m-"+group, g.Members[0].MemberID)
	},
	kmsg.DeleteGroups: func(t *testing.T, c *wireclient.Client, v int16, group string) {
		require.Equal(t, []int16{codeNone}, wiretest.Commit(t, c, directCommit(group, "orders", 0, 3)))
		assert.Equal(t, []string{group + "=0"}, deleteGroups(t, c, v, group))
		assert.Equal(t, map[string]int64{"orders-0": -1}, fetchOffsets(t, c, group, tp{"orders", 0, 0}))
	},
	kmsg.OffsetDelete: func(t *testing.T, c *wireclient.Client, v int16, group string) {
		require.Equal(t, []int16{codeNone}, wiretest.Commit(t, c, directCommit(group, "orders", 0, 3)))
		require.Equal(t, []int16{codeNone}, wiretest.Commit(t, c, directCommit(group, "orders", 1, 4)))
		req := offsetDeleteRequest(group, tp{"orders", 0, 0})
		req.Version = v
		resp := wiretest.Do[*kmsg.OffsetDeleteResponse](t, c, req)
		assert.Equal(t, codeNone, resp.ErrorCode)
		assert.Equal(t, []kmsg.OffsetDeleteResponseTopic{{Topic: "orders", Partitions: []kmsg.OffsetDeleteResponseTopicPartition{{Partition: 0}}}}, resp.Topics)
		assert.Equal(t, map[string]int64{"orders-0": -1, "orders-1": 4}, fetchOffsets(t, c, group, tp{"orders", 0, 0}, tp{"orders", 1, 0}))
	},
	// SASL is off on this broker: both SASL APIs answer ILLEGAL_SASL_STATE
	// and the connection stays open, as on a Kafka PLAINTEXT listener.
	kmsg.SASLHandshake: func(t *testing.T, c *wireclient.Client, v int16, _ string) {
		req := kmsg.NewPtrSASLHandshakeRequest()
		req.Version, req.Mechanism = v, "PLAIN"
		resp := wiretest.Do[*kmsg.SASLHandshakeResponse](t, c, req)
		assert.Equal(t, kerr.IllegalSaslState.Code, resp.ErrorCode)
		assert.Empty(t, resp.SupportedMechanisms)
	},
	kmsg.SASLAuthenticate: func(t *testing.T, c *wireclient.Client, v int16, _ string) {
		req := kmsg.NewPtrSASLAuthenticateRequest()
		req.Version, req.SASLAuthBytes = v, []byte("\x00alice\x00secret")
		resp := wiretest.Do[*kmsg.SASLAuthenticateResponse](t, c, req)
		assert.Equal(t, kerr.IllegalSaslState.Code, resp.ErrorCode)
		assert.Empty(t, resp.SASLAuthBytes)
	},
	kmsg.DescribeCluster: func(t *testing.T, c *wireclient.Client, v int16, _ string) {
		req := kmsg.NewPtrDescribeClusterRequest()
		req.Version, req.EndpointType = v, 1
		resp := wiretest.Do[*kmsg.DescribeClusterResponse](t, c, req)
		assert.Equal(t, codeNone, resp.ErrorCode)
		assert.Equal(t, "minibroker", resp.ClusterID)
		assert.Equal(t, int32(0), resp.ControllerID)
		require.Len(t, resp.Brokers, 1)
		assert.Equal(t, int32(0), resp.Brokers[0].NodeID)
		assert.Equal(t, int32(math.MinInt32), resp.ClusterAuthorizedOperations)
	},
	kmsg.DescribeTransactions: func(t *testing.T, c *wireclient.Client, v int16, group string) {
		req := kmsg.NewPtrDescribeTransactionsRequest()
		req.Version, req.TransactionalIDs = v, []string{group + "-nobody"}
		resp := wiretest.Do[*kmsg.DescribeTransactionsResponse](t, c, req)
		require.Len(t, resp.TransactionStates, 1)
		assert.Equal(t, kerr.TransactionalIDNotFound.Code, resp.TransactionStates[0].ErrorCode)
	},
	kmsg.ListTransactions: func(t *testing.T, c *wireclient.Client, v int16, _ string) {
		req := kmsg.NewPtrListTransactionsRequest()
		req.Version, req.StateFilters = v, []string{"Nope"}
		resp := wiretest.Do[*kmsg.ListTransactionsResponse](t, c, req)
		assert.Equal(t, codeNone, resp.ErrorCode)
		assert.Empty(t, resp.TransactionStates)
		assert.Equal(t, []string{"Nope"}, resp.UnknownStateFilters)
	},
	kmsg.CreatePartitions: func(t *testing.T, c *wireclient.Client, v int16, group string) {
		ensureTopic(t, c, group, 1)
		req := kmsg.NewPtrCreatePartitionsRequest()
		req.Version = v
		req.Topics = []kmsg.CreatePartitionsRequestTopic{{Topic: group, Count: 3}}
		for i, want := range []int16{codeNone, kerr.InvalidPartitions.Code} {
			resp := wiretest.Do[*kmsg.CreatePartitionsResponse](t, c, req)
			require.Len(t, resp.Topics, 1)
			assert.Equal(t, want, resp.Topics[0].ErrorCode, "add %d", i+1)
		}
		produceValues(t, c, group, 2, "on the new partition")
	},
	kmsg.DescribeConfigs: func(t *testing.T, c *wireclient.Client, v int16, group string) {
		ensureTopic(t, c, group, 1)
		req := kmsg.NewPtrDescribeConfigsRequest()
		req.Version = v
		req.Resources = []kmsg.DescribeConfigsRequestResource{{ResourceType: kmsg.ConfigResourceTypeTopic, ResourceName: group}}
		resp := wiretest.Do[*kmsg.DescribeConfigsResponse](t, c, req)
		require.Len(t, resp.Resources, 1)
		assert.Equal(t, codeNone, resp.Resources[0].ErrorCode)
		got := map[string]string{}
		for _, cfg := range resp.Resources[0].Configs {
			got[cfg.Name] = *cfg.Value
		}
		assert.Equal(t, map[string]string{"max.message.bytes": "1048588", "retention.bytes": "-1", "segment.bytes": "67108864"}, got)
	},
	kmsg.AlterConfigs: func(t *testing.T, c *wireclient.Client, v int16, group string) {
		ensureTopic(t, c, group, 1)
		req := kmsg.NewPtrAlterConfigsRequest()
		req.Version = v
		req.Resources = []kmsg.AlterConfigsRequestResource{{ResourceType: kmsg.ConfigResourceTypeTopic, ResourceName: group,
			Configs: []kmsg.AlterConfigsRequestResourceConfig{{Name: "retention.bytes", Value: kmsg.StringPtr("1048576")}}}}
		resp := wiretest.Do[*kmsg.AlterConfigsResponse](t, c, req)
		require.Len(t, resp.Resources, 1)
		assert.Equal(t, codeNone, resp.Resources[0].ErrorCode)
		req.Resources[0].Configs[0].Name = "retention.ms"
		resp = wiretest.Do[*kmsg.AlterConfigsResponse](t, c, req)
		assert.Equal(t, kerr.InvalidConfig.Code, resp.Resources[0].ErrorCode)
	},
	kmsg.IncrementalAlterConfigs: func(t *testing.T, c *wireclient.Client, v int16, group string) {
		ensureTopic(t, c, group, 1)
		req := kmsg.NewPtrIncrementalAlterConfigsRequest()
		req.Version = v
		req.Resources = []kmsg.IncrementalAlterConfigsRequestResource{{ResourceType: kmsg.ConfigResourceTypeTopic, ResourceName: group,
			Configs: []kmsg.IncrementalAlterConfigsRequestResourceConfig{{Name: "max.message.bytes", Op: kmsg.IncrementalAlterConfigOpSet, Value: kmsg.StringPtr("100")}}}}
		resp := wiretest.Do[*kmsg.IncrementalAlterConfigsResponse](t, c, req)
		require.Len(t, resp.Resources, 1)
		assert.Equal(t, codeNone, resp.Resources[0].ErrorCode)
		produce := kmsg.NewPtrProduceRequest()
		produce.Version, produce.Acks, produce.TimeoutMillis = 9, -1, 5000
		produce.Topics = []kmsg.ProduceRequestTopic{{Topic: group, Partitions: []kmsg.ProduceRequestTopicPartition{{Partition: 0,
			Records: valuesBatch(strings.Repeat("x", 100))}}}}
		produced := wiretest.Do[*kmsg.ProduceResponse](t, c, produce)
		assert.Equal(t, kerr.MessageTooLarge.Code, produced.Topics[0].Partitions[0].ErrorCode, "the new limit holds at once")
	},
	kmsg.DeleteRecords: func(t *testing.T, c *wireclient.Client, v int16, group string) {
		ensureTopic(t, c, group, 1)
		produceValues(t, c, group, 0, "a", "b", "c")
		req := kmsg.NewPtrDeleteRecordsRequest()
		req.Version = v
		req.Topics = []kmsg.DeleteRecordsRequestTopic{{Topic: group, Partitions: []kmsg.DeleteRecordsRequestTopicPartition{{Partition: 0, Offset: 2}}}}
		resp := wiretest.Do[*kmsg.DeleteRecordsResponse](t, c, req)
		require.Len(t, resp.Topics, 1)
		assert.Equal(t, codeNone, resp.Topics[0].Partitions[0].ErrorCode)
		assert.Equal(t, int64(2), resp.Topics[0].Partitions[0].LowWatermark)
	},
	kmsg.DeleteTopics: func(t *testing.T, c *wireclient.Client, v int16, group string) {
		ensureTopic(t, c, group, 2)
		produceValues(t, c, group, 1, "a")
		req := kmsg.NewPtrDeleteTopicsRequest()
		req.Version = v
		if v >= 6 {
			rt := kmsg.NewDeleteTopicsRequestTopic()
			rt.Topic = kmsg.StringPtr(group)
			req.Topics = []kmsg.DeleteTopicsRequestTopic{rt}
		} else {
			req.TopicNames = []string{group}
		}
		for i, want := range []int16{codeNone, kerr.UnknownTopicOrPartition.Code} {
			resp := wiretest.Do[*kmsg.DeleteTopicsResponse](t, c, req)
			require.Len(t, resp.Topics, 1)
			assert.Equal(t, want, resp.Topics[0].ErrorCode, "delete %d", i+1)
		}
	},
	kmsg.Fetch: func(t *testing.T, c *wireclient.Client, v int16, group string) {
		ensureTopic(t, c, group)
		produceValues(t, c, group, 0, "a", "b")
		req := fetchRequest(v, 0, fetchAt{group, 0, 0})
		resp := wiretest.Do[*kmsg.FetchResponse](t, c, req)
		assert.Equal(t, codeNone, resp.ErrorCode)
		require.Len(t, resp.Topics, 1)
		p := resp.Topics[0].Partitions[0]
		assert.Equal(t, codeNone, p.ErrorCode)
		assert.Equal(t, int64(2), p.HighWatermark)
		assert.Equal(t, []string{"0:a", "1:b"}, decodedValues(t, p.RecordBatches))
	},
	kmsg.Produce: func(t *testing.T, c *wireclient.Client, v int16, group string) {
		ensureTopic(t, c, group)
		for i, want := range []int64{0, 2} {
			req := produceRequest(v, -1, group, partBatch{0, valuesBatch("x", "y")})
			rp := produceOne(t, c, req)
			assert.Equal(t, codeNone, rp.ErrorCode, "batch %d", i)
			assert.Equal(t, want, rp.BaseOffset, "batch %d", i)
			if v >= 5 {
				assert.Equal(t, int64(0), rp.LogStartOffset)
			}
		}
	},
	kmsg.InitProducerID: func(t *testing.T, c *wireclient.Client, v int16, _ string) {
		seen := map[int64]bool{}
		for range 2 {
			req := kmsg.NewPtrInitProducerIDRequest()
			req.Version, req.ProducerID, req.ProducerEpoch = v, -1, -1
			resp := wiretest.Do[*kmsg.InitProducerIDResponse](t, c, req)
			require.Equal(t, codeNone, resp.ErrorCode)
			assert.GreaterOrEqual(t, resp.ProducerID, int64(0))
			assert.Equal(t, int16(0), resp.ProducerEpoch)
			assert.False(t, seen[resp.ProducerID], "a producer id is handed out once")
			seen[resp.ProducerID] = true
		}
	},
}

// TestWireEveryAPIAtMinAndMaxVersion drives every advertised API at its
// lowest and highest version over the wire.
func TestWireEveryAPIAtMinAndMaxVersion(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	for _, vr := range protocol.SupportedVersions() {
		name := kmsg.NameForKey(vr.Key)
		run, ok := versionCases[kmsg.Key(vr.Key)]
		if !ok {
			t.Errorf("%s (key %d) is advertised but has no version case", name, vr.Key)
			continue
		}
		for _, v := range []int16{vr.Min, vr.Max} {
			t.Run(fmt.Sprintf("%s v%d", name, v), func(t *testing.T) {
				t.Parallel()
				run(t, wiretest.Dial(t, b.Addr(), "c"), v, fmt.Sprintf("%s-v%d", name, v))
			})
		}
	}
}

// TestWireAdvertisedVersions: exactly docs/design.md section 4's versions,
// DeleteGroups, OffsetDelete, ConsumerGroupHeartbeat and
// ConsumerGroupDescribe (section 9), Produce 3-12 and InitProducerId 0-4
// (section 8) included.
func TestWireAdvertisedVersions(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	c := wiretest.Dial(t, b.Addr(), "c")
	resp := wiretest.Do[*kmsg.ApiVersionsResponse](t, c, apiVersionsRequest(4))
	require.Equal(t, codeNone, resp.ErrorCode)
	got := map[string]string{}
	for _, k := range resp.ApiKeys {
		got[kmsg.NameForKey(k.ApiKey)] = fmt.Sprintf("%d-%d", k.MinVersion, k.MaxVersion)
	}
	assert.Equal(t, map[string]string{
		"ApiVersions": "0-4", "Metadata": "0-12", "FindCoordinator": "0-6", "JoinGroup": "0-9", "SyncGroup": "0-5",
		"Heartbeat": "0-4", "LeaveGroup": "0-5", "OffsetCommit": "0-9", "OffsetFetch": "1-9", "DescribeGroups": "0-5",
		"ListGroups": "0-5", "CreateTopics": "0-7", "ListOffsets": "0-7", "Fetch": "4-12",
		"DeleteGroups": "0-2", "OffsetDelete": "0-0", "DeleteTopics": "1-6", "CreatePartitions": "0-3", "DeleteRecords": "0-2",
		"SASLHandshake": "0-1", "SASLAuthenticate": "0-2", "DescribeCluster": "0-2",
		"DescribeConfigs": "0-4", "AlterConfigs": "0-2", "IncrementalAlterConfigs": "0-1",
		"Produce": "3-12", "InitProducerID": "0-4",
		"AddPartitionsToTxn": "0-3", "AddOffsetsToTxn": "0-3", "EndTxn": "0-3", "TxnOffsetCommit": "0-3",
		"DescribeTransactions": "0-0", "ListTransactions": "0-1",
		"ConsumerGroupHeartbeat": "0-1", "ConsumerGroupDescribe": "0-1",
	}, got)
}

// TestWireUnsupportedVersionsClose: a version just outside the table, or
// an API we do not implement (WriteTxnMarkers, AddPartitionsToTxn v4+), closes the
// connection, as Kafka does.
func TestWireUnsupportedVersionsClose(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	produce := func(v int16) kmsg.Request {
		r := kmsg.NewPtrProduceRequest()
		r.Version, r.Acks, r.TimeoutMillis = v, -1, 1000
		return r
	}
	initPID := kmsg.NewPtrInitProducerIDRequest()
	initPID.Version = 5
	txn := kmsg.NewPtrAddPartitionsToTxnRequest()
	txn.Version = 4
	markers := kmsg.NewPtrWriteTxnMarkersRequest()
	endV5 := kmsg.NewPtrEndTxnRequest()
	endV5.Version, endV5.TransactionalID = 5, "tx"
	cgh := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	cgh.Version, cgh.Group = 2, "g"
	tests := []struct {
		name string
		req  kmsg.Request
	}{
		{"Heartbeat v5", wiretest.HeartbeatRequest(5, "g", "m", 1)},
		{"Fetch v3", func() kmsg.Request { r := kmsg.NewPtrFetchRequest(); r.Version = 3; return r }()},
		{"OffsetFetch v0", func() kmsg.Request { r := kmsg.NewPtrOffsetFetchRequest(); r.Version, r.Group = 0, "g"; return r }()},
		{"Metadata v13", metadataRequest(13, nil)},
		{"DeleteTopics v0", func() kmsg.Request { r := kmsg.NewPtrDeleteTopicsRequest(); r.Version = 0; return r }()},
		{"DeleteGroups v3", deleteGroupsRequest(3, "g")},
		{"Produce v2", produce(2)},
		{"Produce v13", produce(13)},
		{"InitProducerId v5", initPID},
		{"AddPartitionsToTxn v4", txn},
		{"WriteTxnMarkers", markers},
		{"EndTxn v5", endV5},
		{"ConsumerGroupHeartbeat v2", cgh},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := wiretest.Dial(t, b.Addr(), "c")
			require.NoError(t, c.Send(kmsg.NewRequestFormatter(kmsg.FormatterClientID("c")).AppendRequest(nil, tc.req, 1)))
			wiretest.RequireClosed(t, c)
		})
	}
}

// TestWireApiVersionsFallback follows KIP-511: an ApiVersions version we do
// not support (kgo starts at v5) gets a v0 body with UNSUPPORTED_VERSION
// and our ApiVersions range, and the same connection then answers v3.
func TestWireApiVersionsFallback(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	for _, v := range []int16{5, 99} {
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) {
			t.Parallel()
			c := wiretest.Dial(t, b.Addr(), "c")
			resp := wiretest.Do[*kmsg.ApiVersionsResponse](t, c, apiVersionsRequest(v))
			assert.Equal(t, int16(0), resp.Version)
			assert.Equal(t, codeUnsupportedVersion, resp.ErrorCode)
			assert.Equal(t, []kmsg.ApiVersionsResponseApiKey{{ApiKey: 18, MinVersion: 0, MaxVersion: 4}}, resp.ApiKeys)

			again := wiretest.Do[*kmsg.ApiVersionsResponse](t, c, apiVersionsRequest(3))
			assert.Equal(t, codeNone, again.ErrorCode)
			assert.Len(t, again.ApiKeys, len(protocol.SupportedVersions()))
		})
	}
}

// TestWireApiVersionsInvalidSoftwareName: from v3 the client software
// name and version must match Kafka's pattern; a bad one is
// INVALID_REQUEST and the connection stays open.
func TestWireApiVersionsInvalidSoftwareName(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	c := wiretest.Dial(t, b.Addr(), "c")
	req := apiVersionsRequest(3)
	req.ClientSoftwareName = "bad name"
	resp := wiretest.Do[*kmsg.ApiVersionsResponse](t, c, req)
	assert.Equal(t, codeInvalidRequest, resp.ErrorCode)
	assert.Len(t, resp.ApiKeys, len(protocol.SupportedVersions()), "the table is still sent (Kafka sends none)")
	assert.Equal(t, codeNone, wiretest.Do[*kmsg.ApiVersionsResponse](t, c, apiVersionsRequest(3)).ErrorCode)
}
