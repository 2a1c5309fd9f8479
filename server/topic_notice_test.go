package server

import (
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestTopicNoticesJoinRefused: a join subscribed to a topic that does not
// exist is refused with UNKNOWN_TOPIC_OR_PARTITION and reported once per
// missing topic, with the group and the client; the client's retry a
// moment later is neither logged nor reported again.
func TestTopicNoticesJoinRefused(t *testing.T) {
	t.Parallel()
	e, obs := newObservedEnv(t)
	for range 2 {
		resp := e.srv.handleJoinGroup(e.req("billing-app", 3), joinRequest(3, "billing", "", "ordrs", "orders", "paymnts")).(*kmsg.JoinGroupResponse)
		require.Equal(t, kerr.UnknownTopicOrPartition.Code, resp.ErrorCode)
	}
	require.Equal(t, []TopicEvent{
		{Kind: TopicJoinRefused, Topic: "ordrs", ClientID: "billing-app", Host: "/127.0.0.1", Group: "billing"},
		{Kind: TopicJoinRefused, Topic: "paymnts", ClientID: "billing-app", Host: "/127.0.0.1", Group: "billing"},
	}, obs.snapshot().topics)
	logged := e.logs.Find("join refused: a subscribed topic does not exist")
	require.Len(t, logged, 2)
	require.Equal(t, "ordrs", logged[0].Attrs["topic"])
	require.Equal(t, "billing", logged[0].Attrs["group"])

	// Another group refused for the same topic is its own event.
	resp := e.srv.handleJoinGroup(e.req("audit-app", 3), joinRequest(3, "audit", "", "ordrs")).(*kmsg.JoinGroupResponse)
	require.Equal(t, kerr.UnknownTopicOrPartition.Code, resp.ErrorCode)
	require.Len(t, obs.snapshot().topics, 3)
}

// TestTopicNoticesMetadata: a Metadata request for a topic that does not
// exist is reported as missing once a minute; one that auto-creates a
// topic is reported and logged at Warn with the client id.
func TestTopicNoticesMetadata(t *testing.T) {
	t.Parallel()
	obs := &recordingObserver{}
	e := newEnvWith(t, envOptions{config: func(cfg *Config) {
		cfg.Observer, cfg.AutoCreateTopics, cfg.DefaultPartitions = obs, true, 2
	}})
	for range 2 {
		resp := call[*kmsg.MetadataResponse](e, "reader", metadataRequest(12, []string{"ordrs"}))
		require.Equal(t, kerr.UnknownTopicOrPartition.Code, resp.Topics[0].ErrorCode)
	}
	create := metadataRequest(12, []string{"ordesr"})
	create.AllowAutoTopicCreation = true
	require.Zero(t, call[*kmsg.MetadataResponse](e, "rdkafka", create).Topics[0].ErrorCode)
	require.Zero(t, call[*kmsg.MetadataResponse](e, "rdkafka", create).Topics[0].ErrorCode, "the topic exists now")
	require.Equal(t, []TopicEvent{
		{Kind: TopicMissing, Topic: "ordrs", ClientID: "reader", Host: "/127.0.0.1"},
		{Kind: TopicAutoCreated, Topic: "ordesr", ClientID: "rdkafka", Host: "/127.0.0.1", Partitions: 2},
	}, obs.snapshot().topics)
	warned := e.logs.AtLevel(slog.LevelWarn)
	require.Len(t, warned, 1)
	require.Equal(t, "topic created on first use: a request named a topic that did not exist (is it a typo? --auto-create-topics=false turns this off)", warned[0].Message)
	require.Equal(t, "ordesr", warned[0].Attrs["topic"])
	require.Equal(t, "rdkafka", warned[0].Attrs["client"])
}
