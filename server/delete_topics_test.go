package server

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/offsets"
	"github.com/minibroker/minibroker/testkit/wiretest"
)

func deleteByName(version int16, names ...string) *kmsg.DeleteTopicsRequest {
	req := kmsg.NewPtrDeleteTopicsRequest()
	req.Version = version
	for _, n := range names {
		if version < 6 {
			req.TopicNames = append(req.TopicNames, n)
			continue
		}
		t := kmsg.NewDeleteTopicsRequestTopic()
		t.Topic = kmsg.StringPtr(n)
		req.Topics = append(req.Topics, t)
	}
	return req
}

// TestDeleteTopicsCodes sends raw DeleteTopics over a socket at every
// served version: a delete answers NONE with the topic's id, a second
// one UNKNOWN_TOPIC_OR_PARTITION, a name with path characters
// INVALID_TOPIC_EXCEPTION, a name twice INVALID_REQUEST with Kafka's
// "Duplicate topic name."; nothing else is deleted.
func TestDeleteTopicsCodes(t *testing.T) {
	t.Parallel()
	for v := int16(1); v <= 6; v++ {
		e := newEnvWith(t, envOptions{topics: map[string]int32{"gone": 2, "twice": 1, "keep": 1}})
		c := wiretest.Dial(t, e.serve(), "admin")
		id, _ := e.cat.Lookup("gone")
		resp := wiretest.Do[*kmsg.DeleteTopicsResponse](t, c, deleteByName(v, "gone", "../keep", "twice", "twice"))
		require.Len(t, resp.Topics, 4)
		require.Equal(t, "gone", *resp.Topics[0].Topic)
		require.Equal(t, int16(0), resp.Topics[0].ErrorCode, "v%d", v)
		if v >= 6 {
			require.Equal(t, [16]byte(id.ID), resp.Topics[0].TopicID)
		}
		require.Equal(t, kerr.InvalidTopicException.Code, resp.Topics[1].ErrorCode)
		require.Equal(t, kerr.InvalidRequest.Code, resp.Topics[2].ErrorCode)
		require.Equal(t, kerr.InvalidRequest.Code, resp.Topics[3].ErrorCode)
		if v >= 5 {
			require.Contains(t, *resp.Topics[1].ErrorMessage, "invalid topic name")
			require.Equal(t, "Duplicate topic name.", *resp.Topics[2].ErrorMessage, "Kafka's message")
			require.Equal(t, "Duplicate topic name.", *resp.Topics[3].ErrorMessage)
		}
		_, ok := e.cat.Lookup("gone")
		require.False(t, ok)
		require.Equal(t, map[string]int32{"keep": 1, "twice": 1}, e.cat.Counts(), "nothing else deleted")
		_, err := e.log.PartitionStats("gone", 0)
		require.Error(t, err, "the logs are gone")
		require.Empty(t, e.cat.Deleting(), "the delete finished")

		again := wiretest.Do[*kmsg.DeleteTopicsResponse](t, c, deleteByName(v, "gone"))
		require.Equal(t, kerr.UnknownTopicOrPartition.Code, again.Topics[0].ErrorCode, "v%d: deleting twice", v)
	}
}

// TestDeleteTopicsByID: v6 with a null name deletes the topic of the id,
// and answers its name; an id no topic has is UNKNOWN_TOPIC_ID.
func TestDeleteTopicsByID(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := wiretest.Dial(t, e.serve(), "admin")
	orders, _ := e.cat.Lookup("orders")
	req := kmsg.NewPtrDeleteTopicsRequest()
	req.Version = 6
	byID := kmsg.NewDeleteTopicsRequestTopic()
	byID.TopicID = orders.ID
	unknown := kmsg.NewDeleteTopicsRequestTopic()
	unknown.TopicID = [16]byte{1, 2, 3}
	req.Topics = []kmsg.DeleteTopicsRequestTopic{byID, unknown}
	resp := wiretest.Do[*kmsg.DeleteTopicsResponse](t, c, req)
	require.Equal(t, int16(0), resp.Topics[0].ErrorCode)
	require.Equal(t, "orders", *resp.Topics[0].Topic)
	require.Equal(t, kerr.UnknownTopicID.Code, resp.Topics[1].ErrorCode)
	require.Equal(t, map[string]int32{"payments": 1}, e.cat.Counts())
}

// TestDeleteTopicsRebalancesAndDropsOffsets: the group that subscribes
// moves to a new generation, reason "topic deleted", and every group's
// offsets of the topic are gone; a topic made again is new.
func TestDeleteTopicsRebalancesAndDropsOffsets(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	joined := e.join("c", "g", "", "orders", "payments")
	require.NoError(t, e.store.Commit("g", []offsets.Entry{{Topic: "orders", Partition: 1, Offset: 5}, {Topic: "payments", Partition: 0, Offset: 7}}))
	old, _ := e.cat.Lookup("orders")
	resp := call[*kmsg.DeleteTopicsResponse](e, "admin", deleteByName(4, "orders"))
	require.Equal(t, int16(0), resp.Topics[0].ErrorCode)

	v, ok := e.coord.Describe("g")
	require.True(t, ok)
	require.Equal(t, joined.Generation+1, v.Generation)
	require.Equal(t, []offsets.Entry{{Topic: "payments", Partition: 0, Offset: 7}}, e.store.Committed("g"))

	created := call[*kmsg.CreateTopicsResponse](e, "admin", createRequest(4, false, createTopic("orders", 2, 1)))
	require.Equal(t, int16(0), created.Topics[0].ErrorCode)
	fresh, _ := e.cat.Lookup("orders")
	require.NotEqual(t, old.ID, fresh.ID)
	start, end, err := e.log.Offsets("orders", 0)
	require.NoError(t, err)
	require.Equal(t, [2]int64{0, 0}, [2]int64{start, end})
}

// TestDeleteTopicsSharesTheDuplicateMessage: the topics a request names
// more than once share one message, not one string each: a request of
// many repeated (or empty) names holds one message.
func TestDeleteTopicsSharesTheDuplicateMessage(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	r := &request{ctx: t.Context(), logger: e.srv.logger, peer: &peer{remote: "127.0.0.1:40000", host: "/127.0.0.1"}}
	req := deleteByName(5, "", "", "twice", "twice")
	resp := e.srv.handleDeleteTopics(r, req).(*kmsg.DeleteTopicsResponse)
	require.Len(t, resp.Topics, 4)
	for _, rt := range resp.Topics {
		require.Equal(t, kerr.InvalidRequest.Code, rt.ErrorCode)
		require.Same(t, resp.Topics[0].ErrorMessage, rt.ErrorMessage, "one message for every repeated name")
	}
}
