package server

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/catalog"
	"github.com/minibroker/minibroker/testkit/wiretest"
)

func createPartitionsRequest(version int16, validateOnly bool, topics ...kmsg.CreatePartitionsRequestTopic) *kmsg.CreatePartitionsRequest {
	req := kmsg.NewPtrCreatePartitionsRequest()
	req.Version, req.ValidateOnly, req.Topics = version, validateOnly, topics
	return req
}

func partitionsTo(topic string, count int32, assignment ...[]int32) kmsg.CreatePartitionsRequestTopic {
	t := kmsg.NewCreatePartitionsRequestTopic()
	t.Topic, t.Count = topic, count
	for _, r := range assignment {
		t.Assignment = append(t.Assignment, kmsg.CreatePartitionsRequestTopicAssignment{Replicas: r})
	}
	return t
}

// TestCreatePartitionsCodes sends raw CreatePartitions over a socket at
// every served version, with and without ValidateOnly: more partitions
// answer NONE (and with ValidateOnly change nothing), the same count or
// fewer INVALID_PARTITIONS, an unknown topic UNKNOWN_TOPIC_OR_PARTITION,
// a count past the cap (100,000) INVALID_PARTITIONS naming the limit, a
// bad manual assignment INVALID_REPLICA_ASSIGNMENT, a topic twice
// INVALID_REQUEST.
func TestCreatePartitionsCodes(t *testing.T) {
	t.Parallel()
	for v := int16(0); v <= 3; v++ {
		for _, validateOnly := range []bool{false, true} {
			e := newEnvWith(t, envOptions{topics: map[string]int32{"orders": 4, "payments": 1, "twice": 1, "few": 2, "assigned": 1, "big": 1}})
			c := wiretest.Dial(t, e.serve(), "admin")
			resp := wiretest.Do[*kmsg.CreatePartitionsResponse](t, c, createPartitionsRequest(v, validateOnly,
				partitionsTo("orders", 6), partitionsTo("payments", 1), partitionsTo("few", 1), partitionsTo("nope", 3),
				partitionsTo("twice", 2), partitionsTo("twice", 3), partitionsTo("big", 100_000),
				partitionsTo("assigned", 3, []int32{0}, []int32{1}), partitionsTo("assigned", 2, []int32{0}, []int32{0})))
			codes := make([]int16, len(resp.Topics))
			for i, rt := range resp.Topics {
				codes[i] = rt.ErrorCode
			}
			require.Equal(t, []int16{0, kerr.InvalidPartitions.Code, kerr.InvalidPartitions.Code, kerr.UnknownTopicOrPartition.Code,
				kerr.InvalidRequest.Code, kerr.InvalidRequest.Code, kerr.InvalidPartitions.Code,
				kerr.InvalidRequest.Code, kerr.InvalidRequest.Code}, codes, "v%d validate %v", v, validateOnly)
			require.Contains(t, *resp.Topics[6].ErrorMessage, "limit 100000")
			want := map[string]int32{"orders": 6, "payments": 1, "twice": 1, "few": 2, "assigned": 1, "big": 1}
			if validateOnly {
				want["orders"] = 4
			}
			require.Equal(t, want, e.cat.Counts())
			_, err := e.log.PartitionStats("orders", 5)
			if validateOnly {
				require.Error(t, err, "validate only makes no partition")
			} else {
				require.NoError(t, err, "the new partitions have logs")
			}
		}
	}
}

// TestCreatePartitionsAssignment: one replica list of [0] per new
// partition is accepted; other lists are INVALID_REPLICA_ASSIGNMENT.
func TestCreatePartitionsAssignment(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	resp := call[*kmsg.CreatePartitionsResponse](e, "admin", createPartitionsRequest(3, false,
		partitionsTo("payments", 3, []int32{0}, []int32{0}), partitionsTo("orders", 6, []int32{0}, []int32{1})))
	require.Equal(t, int16(0), resp.Topics[0].ErrorCode)
	require.Equal(t, kerr.InvalidReplicaAssignment.Code, resp.Topics[1].ErrorCode)
	resp = call[*kmsg.CreatePartitionsResponse](e, "admin", createPartitionsRequest(3, false, partitionsTo("orders", 6, []int32{0})))
	require.Equal(t, kerr.InvalidReplicaAssignment.Code, resp.Topics[0].ErrorCode, "one list for two partitions")
	require.Equal(t, map[string]int32{"orders": 4, "payments": 3}, e.cat.Counts())
}

// TestCreatePartitionsRebalances: a group that subscribes gets a new
// generation whose assignment covers the new partitions.
func TestCreatePartitionsRebalances(t *testing.T) {
	t.Parallel()
	e := newEnvWith(t, envOptions{catalog: catalog.Config{MaxPartitions: 8}})
	joined := e.join("c", "g", "", "payments")
	resp := call[*kmsg.CreatePartitionsResponse](e, "admin", createPartitionsRequest(1, false, partitionsTo("payments", 3)))
	require.Equal(t, int16(0), resp.Topics[0].ErrorCode)
	v, _ := e.coord.Describe("g")
	require.Equal(t, joined.Generation+1, v.Generation)
	require.Len(t, v.Members, 1)
	require.Len(t, v.Members[0].Assignment, 3)
	resp = call[*kmsg.CreatePartitionsResponse](e, "admin", createPartitionsRequest(1, false, partitionsTo("payments", 5)))
	require.Equal(t, kerr.InvalidPartitions.Code, resp.Topics[0].ErrorCode, "4 + 5 is past the cap of 8")
	require.Contains(t, *resp.Topics[0].ErrorMessage, "limit 8")
}
