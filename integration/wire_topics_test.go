package integration

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/broker"
	"github.com/minibroker/minibroker/testkit/wiretest"
)

func createTopicsRequest(version int16, validateOnly bool, topics ...kmsg.CreateTopicsRequestTopic) *kmsg.CreateTopicsRequest {
	req := kmsg.NewPtrCreateTopicsRequest()
	req.Version, req.ValidateOnly, req.Topics, req.TimeoutMillis = version, validateOnly, topics, 5000
	return req
}

func newTopic(name string, partitions int32, rf int16) kmsg.CreateTopicsRequestTopic {
	t := kmsg.NewCreateTopicsRequestTopic()
	t.Topic, t.NumPartitions, t.ReplicationFactor = name, partitions, rf
	return t
}

// metadataTopics returns "name:code:partitions" per topic of resp.
func metadataTopics(resp *kmsg.MetadataResponse) []string {
	var out []string
	for _, rt := range resp.Topics {
		out = append(out, fmt.Sprintf("%s:%d:%d", *rt.Topic, rt.ErrorCode, len(rt.Partitions)))
	}
	return out
}

func metadataRequest(version int16, names []string) *kmsg.MetadataRequest {
	req := kmsg.NewPtrMetadataRequest()
	req.Version = version
	if names != nil {
		req.Topics = []kmsg.MetadataRequestTopic{}
		for _, n := range names {
			req.Topics = append(req.Topics, kmsg.MetadataRequestTopic{Topic: ptrTo(n)})
		}
	}
	return req
}

func TestWireCreateTopics(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	c := wiretest.Dial(t, b.Addr(), "c")
	tests := []struct {
		name         string
		topic        kmsg.CreateTopicsRequestTopic
		validateOnly bool
		want         int16
		partitions   int32 // in Metadata afterwards; 0 = not created
	}{
		{"created", newTopic("events", 3, 1), false, codeNone, 3},
		{"broker defaults", newTopic("defaults", -1, -1), false, codeNone, 1},
		{"exists", newTopic("orders", 2, 1), false, codeTopicAlreadyExists, 4},
		{"replication factor 3", newTopic("rf3", 1, 3), false, codeInvalidReplicationFactor, 0},
		{"zero partitions", newTopic("zero", 0, 1), false, codeInvalidPartitions, 0},
		{"bad name", newTopic("bad name!", 1, 1), false, codeInvalidTopicException, 0},
		{"validate only", newTopic("dry", 2, 1), true, codeNone, 0},
		{"validate only, exists", newTopic("payments", 2, 1), true, codeTopicAlreadyExists, 1},
		{"validate only, replication factor 3", newTopic("dry", 2, 3), true, codeInvalidReplicationFactor, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp := wiretest.Do[*kmsg.CreateTopicsResponse](t, c, createTopicsRequest(7, tc.validateOnly, tc.topic))
			require.Len(t, resp.Topics, 1)
			rt := resp.Topics[0]
			assert.Equal(t, tc.topic.Topic, rt.Topic)
			assert.Equal(t, tc.want, rt.ErrorCode)
			if tc.want == codeNone {
				assert.Nil(t, rt.ErrorMessage)
				assert.Equal(t, int16(1), rt.ReplicationFactor)
			} else {
				assert.NotNil(t, rt.ErrorMessage)
			}
			md := wiretest.Do[*kmsg.MetadataResponse](t, c, metadataRequest(12, []string{tc.topic.Topic}))
			if tc.partitions == 0 {
				assert.Equal(t, []string{tc.topic.Topic + ":3:0"}, metadataTopics(md), "not created")
			} else {
				assert.Equal(t, []string{fmt.Sprintf("%s:0:%d", tc.topic.Topic, tc.partitions)}, metadataTopics(md))
			}
		})
	}
	resp := wiretest.Do[*kmsg.CreateTopicsResponse](t, c, createTopicsRequest(0, false, newTopic("v0", 2, 1)))
	assert.Equal(t, codeNone, resp.Topics[0].ErrorCode, "v0")

	// A new topic can be subscribed to at once.
	join := join(t, c, "g", "events")
	assert.Equal(t, []string{"events-0", "events-1", "events-2"}, assignment(t, c, "g", join.MemberID, join.Generation))
}

// TestWireMetadata: Metadata at each version, with topic auto-creation
// off so that an unknown topic stays unknown (TestWireMetadataAutoCreation
// pins the creation).
func TestWireMetadata(t *testing.T) {
	t.Parallel()
	b := startBroker(t, func(cfg *broker.Config) { cfg.NoAutoCreateTopics = true })
	c := wiretest.Dial(t, b.Addr(), "c")
	all := []string{"orders:0:4", "payments:0:1"}
	tests := []struct {
		version int16
		names   []string
		want    []string
	}{
		{0, []string{}, all},
		{0, []string{"nope", "payments"}, []string{"nope:3:0", "payments:0:1"}},
		{1, nil, all},
		{1, []string{}, nil},
		{4, []string{"orders"}, []string{"orders:0:4"}},
		{12, nil, all},
		{12, []string{}, nil},
		{12, []string{"nope"}, []string{"nope:3:0"}},
	}
	for _, tc := range tests {
		resp := wiretest.Do[*kmsg.MetadataResponse](t, c, metadataRequest(tc.version, tc.names))
		assert.Equal(t, tc.want, metadataTopics(resp), "v%d %v", tc.version, tc.names)
		assert.Equal(t, []kmsg.MetadataResponseBroker{{NodeID: 0, Host: "127.0.0.1", Port: b.port(t)}}, resp.Brokers,
			"v%d: this broker, at its bound address", tc.version)
		if tc.version >= 1 {
			assert.Equal(t, int32(0), resp.ControllerID)
		}
		if tc.version >= 2 {
			require.NotNil(t, resp.ClusterID)
			assert.Equal(t, "minibroker", *resp.ClusterID)
		}
	}
	resp := wiretest.Do[*kmsg.MetadataResponse](t, c, metadataRequest(12, []string{"orders"}))
	for i, p := range resp.Topics[0].Partitions {
		assert.Equal(t, int32(i), p.Partition)
		assert.Equal(t, int32(0), p.Leader)
		assert.Equal(t, []int32{0}, p.Replicas)
		assert.Equal(t, []int32{0}, p.ISR)
	}
}

// TestWireMetadataAdvertise: the configured address is what clients are
// told, not the bound one.
func TestWireMetadataAdvertise(t *testing.T) {
	t.Parallel()
	b := startBroker(t, func(cfg *broker.Config) { cfg.Advertise = "kafka.example:19092" })
	c := wiretest.Dial(t, b.Addr(), "c")
	resp := wiretest.Do[*kmsg.MetadataResponse](t, c, metadataRequest(12, []string{}))
	assert.Equal(t, []kmsg.MetadataResponseBroker{{NodeID: 0, Host: "kafka.example", Port: 19092}}, resp.Brokers)
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.Version, fc.CoordinatorKeys = 6, []string{"g"}
	fresp := wiretest.Do[*kmsg.FindCoordinatorResponse](t, c, fc)
	assert.Equal(t, []kmsg.FindCoordinatorResponseCoordinator{{Key: "g", NodeID: 0, Host: "kafka.example", Port: 19092}}, fresp.Coordinators)
}

func TestWireFindCoordinator(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	c := wiretest.Dial(t, b.Addr(), "c")
	for v := int16(0); v <= 3; v++ {
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.Version, req.CoordinatorKey = v, "g"
		resp := wiretest.Do[*kmsg.FindCoordinatorResponse](t, c, req)
		assert.Equal(t, codeNone, resp.ErrorCode, "v%d", v)
		assert.Equal(t, int32(0), resp.NodeID, "v%d", v)
		assert.Equal(t, "127.0.0.1", resp.Host, "v%d", v)
		assert.Equal(t, b.port(t), resp.Port, "v%d", v)
	}
	for v := int16(4); v <= 6; v++ {
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.Version, req.CoordinatorKeys = v, []string{"g2", "g1", "tx"}
		resp := wiretest.Do[*kmsg.FindCoordinatorResponse](t, c, req)
		require.Len(t, resp.Coordinators, 3, "v%d: one entry per key", v)
		for i, key := range req.CoordinatorKeys {
			assert.Equal(t, kmsg.FindCoordinatorResponseCoordinator{Key: key, NodeID: 0, Host: "127.0.0.1", Port: b.port(t)},
				resp.Coordinators[i], "v%d", v)
		}
	}
}

// TestWireFetchIdles: a fetch at the high watermark of an empty partition
// waits its MaxWait and answers no records, so stock consumers idle
// cleanly; one past the high watermark is OFFSET_OUT_OF_RANGE at once.
func TestWireFetchIdles(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	c := wiretest.Dial(t, b.Addr(), "c")
	for _, v := range []int16{4, 12} {
		start := time.Now()
		p := fetchPartitions(t, c, fetchRequest(v, 50*time.Millisecond, fetchAt{"orders", 1, 0}))["orders-1"]
		assert.GreaterOrEqual(t, time.Since(start), 50*time.Millisecond, "v%d waits MaxWait", v)
		assert.Equal(t, codeNone, p.ErrorCode)
		assert.Equal(t, int64(0), p.HighWatermark)
		assert.Equal(t, int64(0), p.LastStableOffset)
		assert.Empty(t, p.RecordBatches)

		start = time.Now()
		p = fetchPartitions(t, c, fetchRequest(v, time.Minute, fetchAt{"orders", 1, 1234}))["orders-1"]
		assert.Less(t, time.Since(start), waitTimeout, "v%d: an error answers without waiting", v)
		assert.Equal(t, codeOffsetOutOfRange, p.ErrorCode, "v%d: past the high watermark", v)
		assert.Equal(t, int64(0), p.HighWatermark)
		assert.Empty(t, p.RecordBatches)
	}
}

// TestWireMetadataAutoCreation: a Metadata request that names a topic
// that does not exist creates it with DefaultPartitions partitions when
// the request allows it (AllowAutoTopicCreation from v4; every request
// before v4) and the broker auto-creates topics (NoAutoCreateTopics off,
// the default), as Kafka's auto.create.topics.enable does; the topic is
// answered whole at once. A request that does not allow it, a request for
// all topics, and a broker with NoAutoCreateTopics create nothing. An
// invalid name is INVALID_TOPIC_EXCEPTION.
func TestWireMetadataAutoCreation(t *testing.T) {
	t.Parallel()
	type ask struct {
		version int16
		topic   string
		allow   bool
		want    string
	}
	tests := []struct {
		name   string
		adjust func(*broker.Config)
		asks   []ask
	}{
		{"on, default partitions", nil, []ask{
			{4, "refused", false, "refused:3:0"},
			{12, "refused", false, "refused:3:0"},
			{4, "v4", true, "v4:0:1"},
			{12, "v12", true, "v12:0:1"},
			{0, "v0", false, "v0:0:1"}, // before v4 every request allows it
			{3, "v3", false, "v3:0:1"},
			{12, "bad name!", true, "bad name!:17:0"},
		}},
		{"on, three partitions", func(cfg *broker.Config) { cfg.DefaultPartitions = 3 }, []ask{
			{12, "three", true, "three:0:3"},
			{12, "three", true, "three:0:3"}, // once created, it is just there
		}},
		{"off", func(cfg *broker.Config) { cfg.NoAutoCreateTopics = true }, []ask{
			{12, "auto", true, "auto:3:0"},
			{0, "auto", false, "auto:3:0"},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var adjust []func(*broker.Config)
			if tc.adjust != nil {
				adjust = append(adjust, tc.adjust)
			}
			b := startBroker(t, adjust...)
			c := wiretest.Dial(t, b.Addr(), "c")
			created := []string{"orders:0:4", "payments:0:1"}
			for _, a := range tc.asks {
				req := metadataRequest(a.version, []string{a.topic})
				req.AllowAutoTopicCreation = a.allow
				resp := wiretest.Do[*kmsg.MetadataResponse](t, c, req)
				assert.Equal(t, []string{a.want}, metadataTopics(resp), "v%d %s allow=%v", a.version, a.topic, a.allow)
				if strings.Contains(a.want, ":0:") && !slices.Contains(created, a.want) {
					created = append(created, a.want)
				}
			}
			slices.Sort(created)
			all := wiretest.Do[*kmsg.MetadataResponse](t, c, metadataRequest(12, nil))
			assert.Equal(t, created, metadataTopics(all), "a request for all topics creates none")
			for _, topic := range created {
				name, _, _ := strings.Cut(topic, ":")
				if name != "orders" && name != "payments" {
					assert.Equal(t, int64(0), produceValues(t, c, name, 0, "first"), "%s takes records at once", name)
				}
			}
		})
	}
}
