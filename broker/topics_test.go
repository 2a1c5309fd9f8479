package broker

import (
	"bytes"
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/catalog"
	"github.com/minibroker/minibroker/internal/testutil"
	"github.com/minibroker/minibroker/records"
	"github.com/minibroker/minibroker/server"
	"github.com/minibroker/minibroker/testkit/wiretest"
	"github.com/minibroker/minibroker/topics"
	"github.com/minibroker/minibroker/wireclient"
)

// produceValue produces one record of value to topic's partition over
// c, and returns the partition's error code.
func produceValue(t *testing.T, c *wireclient.Client, topic string, partition int32, value []byte) int16 {
	t.Helper()
	req := kmsg.NewPtrProduceRequest()
	req.Version, req.Acks, req.TimeoutMillis = 9, -1, 5000
	batch := records.EncodeBatch(records.BatchSpec{FirstTimestamp: time.Now().UnixMilli(), Records: []records.Record{{Value: value}}})
	req.Topics = []kmsg.ProduceRequestTopic{{Topic: topic, Partitions: []kmsg.ProduceRequestTopicPartition{{Partition: partition, Records: batch}}}}
	return wiretest.Do[*kmsg.ProduceResponse](t, c, req).Topics[0].Partitions[0].ErrorCode
}

// TestCreateTopicWithConfigs: CreateTopic gives the topic its configs,
// in force at once (a batch over its max.message.bytes is refused), and
// refuses what CreateTopics refuses, with the same errors, creating
// nothing.
func TestCreateTopicWithConfigs(t *testing.T) {
	t.Parallel()
	b := start(t, Config{})
	require.NoError(t, b.CreateTopic("events", 2, map[string]string{"max.message.bytes": " 1024 ", "retention.bytes": "1048576"}))
	events := mustTopic(t, b, "events")
	require.Equal(t, int32(2), events.Partitions)
	require.Equal(t, map[string]string{"max.message.bytes": "1024", "retention.bytes": "1048576"}, events.Configs, "saved as Kafka parses them")
	c := wiretest.Dial(t, b.Addr(), "test")
	require.Equal(t, kerr.MessageTooLarge.Code, produceValue(t, c, "events", 0, bytes.Repeat([]byte("x"), 2048)))
	require.Zero(t, produceValue(t, c, "events", 0, []byte("small")))

	for _, tc := range []struct {
		name       string
		topic      string
		partitions int32
		configs    map[string]string
		is         error
		msg        string
	}{
		{"taken", "events", 1, nil, catalog.ErrTopicExists, `topic already exists: "events"`},
		{"bad name", "a b", 1, nil, catalog.ErrInvalidTopic, `invalid topic name: "a b"`},
		{"no partitions", "none", 0, nil, catalog.ErrInvalidPartitions, `invalid partition count: 0 for "none"`},
		{"unknown config", "compacted", 1, map[string]string{"cleanup.policy": "compact"}, topics.ErrInvalidConfig,
			"invalid config: Unknown topic config name: cleanup.policy"},
		{"value too small", "tiny", 1, map[string]string{"segment.bytes": "10"}, topics.ErrInvalidConfig,
			"invalid config: Invalid value 10 for configuration segment.bytes: Value must be at least " + strconv.Itoa(records.MinSegmentBytes)},
		{"not a number", "nan", 1, map[string]string{"retention.bytes": "lots"}, topics.ErrInvalidConfig,
			"invalid config: Invalid value lots for configuration retention.bytes: Not a number of type LONG"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := b.CreateTopic(tc.topic, tc.partitions, tc.configs)
			require.ErrorIs(t, err, tc.is)
			require.EqualError(t, err, tc.msg)
			if tc.topic != "events" {
				_, ok := b.Catalog().Lookup(tc.topic)
				require.False(t, ok, "nothing created")
			}
		})
	}
}

// TestTopicConfigsAtStart: Config.TopicConfigs gives the configured
// topics their configs when Start creates them; a topic that exists
// keeps its own, with a warning when they differ.
func TestTopicConfigsAtStart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := Config{DataDir: dir, Topics: map[string]int32{"audit": 1, "plain": 1},
		TopicConfigs: map[string]map[string]string{"audit": {"max.message.bytes": "1024"}}}
	b, err := Start(t.Context(), cfg)
	require.NoError(t, err)
	require.Equal(t, map[string]string{"max.message.bytes": "1024"}, mustTopic(t, b, "audit").Configs)
	require.Nil(t, mustTopic(t, b, "plain").Configs)
	c := wiretest.Dial(t, b.Addr(), "test")
	require.Equal(t, kerr.MessageTooLarge.Code, produceValue(t, c, "audit", 0, bytes.Repeat([]byte("x"), 2048)))
	require.Zero(t, produceValue(t, c, "plain", 0, bytes.Repeat([]byte("x"), 2048)))
	require.NoError(t, b.Close())

	logs := testutil.NewLogRecorder(nil, nil)
	cfg.TopicConfigs = map[string]map[string]string{"audit": {"max.message.bytes": "4096"}}
	cfg.Logger = logs.Logger()
	again := start(t, cfg)
	require.Equal(t, map[string]string{"max.message.bytes": "1024"}, mustTopic(t, again, "audit").Configs, "an existing topic keeps its configs")
	warned := logs.Find("topic exists with other configs; keeping them")
	require.Len(t, warned, 1)
	require.Equal(t, "audit", warned[0].Attrs["topic"])
}

// TestPartitions: each partition's log start, high watermark, last
// stable offset, size and leader, as produce, DeleteRecords and an open
// transaction move them; an unknown topic is an error.
func TestPartitions(t *testing.T) {
	t.Parallel()
	b := start(t, Config{Topics: map[string]int32{"orders": 3}})
	c := wiretest.Dial(t, b.Addr(), "test")
	for range 3 {
		require.Zero(t, produceValue(t, c, "orders", 1, []byte("v")))
	}
	del := kmsg.NewPtrDeleteRecordsRequest()
	del.Version, del.TimeoutMillis = 2, 5000
	del.Topics = []kmsg.DeleteRecordsRequestTopic{{Topic: "orders", Partitions: []kmsg.DeleteRecordsRequestTopicPartition{{Partition: 1, Offset: 2}}}}
	require.Zero(t, wiretest.Do[*kmsg.DeleteRecordsResponse](t, c, del).Topics[0].Partitions[0].ErrorCode)

	// An open transaction on partition 2 holds its last stable offset back.
	txn, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.TransactionalID("tx"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	require.NoError(t, err)
	defer txn.Close()
	ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
	defer cancel()
	require.Zero(t, produceValue(t, c, "orders", 2, []byte("before")))
	require.NoError(t, txn.BeginTransaction())
	require.NoError(t, txn.ProduceSync(ctx, &kgo.Record{Topic: "orders", Partition: 2, Value: []byte("in a transaction")}).FirstErr())

	parts, err := b.Partitions("orders")
	require.NoError(t, err)
	require.Len(t, parts, 3)
	for i, p := range parts {
		require.Equal(t, int32(i), p.Partition)
		require.Equal(t, server.NodeID, p.Leader)
	}
	require.Equal(t, PartitionInfo{Partition: 0, Leader: server.NodeID}, parts[0], "an empty partition")
	require.Equal(t, []int64{2, 3, 3}, []int64{parts[1].LogStartOffset, parts[1].HighWatermark, parts[1].LastStableOffset})
	require.Positive(t, parts[1].Bytes)
	require.Equal(t, []int64{0, 2, 1}, []int64{parts[2].LogStartOffset, parts[2].HighWatermark, parts[2].LastStableOffset},
		"the transaction's first offset, 1, holds the last stable offset")

	require.NoError(t, txn.EndTransaction(ctx, kgo.TryCommit))
	parts, err = b.Partitions("orders")
	require.NoError(t, err)
	require.Equal(t, []int64{3, 3}, []int64{parts[2].HighWatermark, parts[2].LastStableOffset}, "committed: its marker is offset 2")

	_, err = b.Partitions("nope")
	require.ErrorIs(t, err, catalog.ErrUnknownTopic)
}
