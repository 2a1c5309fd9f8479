package server

import (
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/internal/testutil"
	"github.com/minibroker/minibroker/testkit/wiretest"
)

func metadataRequest(version int16, topics []string) *kmsg.MetadataRequest {
	req := kmsg.NewPtrMetadataRequest()
	req.Version = version
	if topics != nil {
		req.Topics = []kmsg.MetadataRequestTopic{}
		for _, name := range topics {
			req.Topics = append(req.Topics, kmsg.MetadataRequestTopic{Topic: &name})
		}
	}
	return req
}

// topicSummary flattens a topic: "name:code:partitions".
func topicSummary(resp *kmsg.MetadataResponse) []string {
	var out []string
	for _, t := range resp.Topics {
		name := "<nil>"
		if t.Topic != nil {
			name = *t.Topic
		}
		out = append(out, fmt.Sprintf("%s:%d:%d", name, t.ErrorCode, len(t.Partitions)))
	}
	return out
}

func TestMetadataTopicSelection(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	all := []string{"orders:0:4", "payments:0:1"}
	tests := []struct {
		name    string
		version int16
		topics  []string
		want    []string
	}{
		{"v0 empty is all", 0, []string{}, all},
		{"v1 null is all", 1, nil, all},
		{"v1 empty is none", 1, []string{}, nil},
		{"v12 null is all", 12, nil, all},
		{"v12 empty is none", 12, []string{}, nil},
		{"named in request order", 4, []string{"payments", "orders"}, []string{"payments:0:1", "orders:0:4"}},
		{"unknown topic", 0, []string{"nope", "orders"}, []string{"nope:3:0", "orders:0:4"}},
		{"unknown topic v12", 12, []string{"nope"}, []string{"nope:3:0"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp := call[*kmsg.MetadataResponse](e, "c", metadataRequest(tc.version, tc.topics))
			assert.Equal(t, tc.want, topicSummary(resp))
			assert.Equal(t, []kmsg.MetadataResponseBroker{{NodeID: 0, Host: "127.0.0.1", Port: envPort}}, resp.Brokers)
			assert.Equal(t, int32(0), resp.ControllerID)
			require.NotNil(t, resp.ClusterID)
			assert.Equal(t, "minibroker", *resp.ClusterID)
		})
	}
}

func TestMetadataPartitions(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	resp := call[*kmsg.MetadataResponse](e, "c", metadataRequest(12, []string{"orders"}))
	require.Len(t, resp.Topics, 1)
	require.Len(t, resp.Topics[0].Partitions, 4)
	for i, p := range resp.Topics[0].Partitions {
		assert.Equal(t, int32(i), p.Partition, "partitions 0..n-1 in order")
		assert.Zero(t, p.ErrorCode)
		assert.Equal(t, int32(0), p.Leader, "this node leads every partition")
		assert.Equal(t, []int32{0}, p.Replicas)
		assert.Equal(t, []int32{0}, p.ISR)
	}
	assert.False(t, resp.Topics[0].IsInternal)
}

// TestMetadataNullTopicName: from v12 a topic may be asked for by id only;
// an id the catalog does not know is UNKNOWN_TOPIC_ID.
func TestMetadataNullTopicName(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	req := kmsg.NewPtrMetadataRequest()
	req.Version = 12
	id := [16]byte{1, 2, 3}
	payments, _ := e.cat.Lookup("payments")
	req.Topics = []kmsg.MetadataRequestTopic{{TopicID: id}, {TopicID: payments.ID}}
	resp := call[*kmsg.MetadataResponse](e, "c", req)
	require.Len(t, resp.Topics, 2)
	assert.Nil(t, resp.Topics[0].Topic)
	assert.Equal(t, id, resp.Topics[0].TopicID)
	assert.Equal(t, kerr.UnknownTopicID.Code, resp.Topics[0].ErrorCode)
	require.NotNil(t, resp.Topics[1].Topic)
	assert.Equal(t, "payments", *resp.Topics[1].Topic)
	assert.Equal(t, [16]byte(payments.ID), resp.Topics[1].TopicID)
	assert.Len(t, resp.Topics[1].Partitions, 1)
}

// TestMetadataTopicIDs: from v10 each topic carries the catalog's id:
// never zero, distinct per topic, the same on every request; an unknown
// topic's is zero. Before v10 the field is not on the wire.
func TestMetadataTopicIDs(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	orders, _ := e.cat.Lookup("orders")
	payments, _ := e.cat.Lookup("payments")
	for _, v := range []int16{10, 11, 12} {
		resp := call[*kmsg.MetadataResponse](e, "c", metadataRequest(v, []string{"orders", "payments", "nope"}))
		require.Len(t, resp.Topics, 3)
		assert.Equal(t, [16]byte(orders.ID), resp.Topics[0].TopicID, "v%d", v)
		assert.Equal(t, [16]byte(payments.ID), resp.Topics[1].TopicID, "v%d", v)
		assert.Zero(t, resp.Topics[2].TopicID, "v%d", v)
	}
	assert.NotZero(t, orders.ID)
	assert.NotEqual(t, orders.ID, payments.ID)
}

// TestMetadataAutoCreatesTopics: a topic a request names and allows is
// created with the default partitions, only when the broker auto-creates.
func TestMetadataAutoCreatesTopics(t *testing.T) {
	t.Parallel()
	auto := newEnvWith(t, envOptions{config: func(cfg *Config) { cfg.AutoCreateTopics, cfg.DefaultPartitions = true, 3 }})
	req := metadataRequest(12, []string{"fresh", "bad name"})
	req.AllowAutoTopicCreation = true
	resp := call[*kmsg.MetadataResponse](auto, "p", req)
	require.Len(t, resp.Topics, 2)
	assert.Zero(t, resp.Topics[0].ErrorCode)
	assert.Len(t, resp.Topics[0].Partitions, 3)
	assert.NotEqual(t, [16]byte{}, resp.Topics[0].TopicID)
	assert.Equal(t, kerr.InvalidTopicException.Code, resp.Topics[1].ErrorCode)
	require.Len(t, auto.logs.Find("topic created on first use: a request named a topic that did not exist (is it a typo? --auto-create-topics=false turns this off)"), 1)

	req = metadataRequest(12, []string{"other"}) // does not allow it
	resp = call[*kmsg.MetadataResponse](auto, "c", req)
	assert.Equal(t, kerr.UnknownTopicOrPartition.Code, resp.Topics[0].ErrorCode)
	assert.Len(t, auto.logs.Find("metadata for a topic that does not exist: a consumer of it waits until it is created (CreateTopics, --topic, or a producer with topic auto-creation)"), 1)
	call[*kmsg.MetadataResponse](auto, "c", req)
	assert.Len(t, auto.logs.Find("metadata for a topic that does not exist: a consumer of it waits until it is created (CreateTopics, --topic, or a producer with topic auto-creation)"), 1, "once a minute per topic")

	off := newEnv(t)
	req = metadataRequest(3, []string{"fresh"}) // v3: every request allows it
	resp = call[*kmsg.MetadataResponse](off, "p", req)
	assert.Equal(t, kerr.UnknownTopicOrPartition.Code, resp.Topics[0].ErrorCode, "the broker does not auto-create")
}

// TestMetadataAutoCreateWarningLine: the Warn line of a topic created on
// first use, as the broker's text log prints it over a real connection:
// the topic, its partitions, the client id, and the connection's remote
// address once (the connection's logger carries it; the line does not
// add it again).
func TestMetadataAutoCreateWarningLine(t *testing.T) {
	t.Parallel()
	var out testutil.Buffer
	e := newEnvWith(t, envOptions{config: func(cfg *Config) {
		cfg.AutoCreateTopics, cfg.DefaultPartitions = true, 2
		cfg.Logger = slog.New(slog.NewTextHandler(&out, nil))
	}})
	c := wiretest.Dial(t, e.serve(), "rdkafka")
	req := metadataRequest(12, []string{"ordesr"})
	req.AllowAutoTopicCreation = true
	resp := wiretest.Do[*kmsg.MetadataResponse](t, c, req)
	require.Zero(t, resp.Topics[0].ErrorCode)

	var line string
	for l := range strings.Lines(out.String()) {
		if strings.Contains(l, `msg="topic created on first use`) {
			require.Empty(t, line, "one line:\n%s", out.String())
			line = l
		}
	}
	require.Regexp(t, `^time=\S+ level=WARN msg="topic created on first use: [^"]+" remote=127\.0\.0\.1:\d+ topic=ordesr partitions=2 client=rdkafka\n$`, line)
	require.Equal(t, 1, strings.Count(line, "remote="), line)
}
