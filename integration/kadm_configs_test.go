package integration

// kadm's config calls against minibroker: topic and broker configs read,
// altered incrementally and whole, given at CreateTopic, honoured by the
// partition logs, and kept across a restart.

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/minibroker/minibroker/broker"
	"github.com/minibroker/minibroker/records"
)

// topicConfigs describes topic's configs with kadm as "value@SOURCE" by name.
func topicConfigs(t *testing.T, adm *kadm.Client, topic string) map[string]string {
	t.Helper()
	rcs, err := adm.DescribeTopicConfigs(kadmCtx(t), topic)
	require.NoError(t, err)
	rc, err := rcs.On(topic, nil)
	require.NoError(t, err)
	require.NoError(t, rc.Err)
	out := map[string]string{}
	for _, c := range rc.Configs {
		out[c.Key] = c.MaybeValue() + "@" + c.Source.String()
	}
	return out
}

func alterOne(t *testing.T, adm *kadm.Client, topic, name string, value string) error {
	t.Helper()
	resps, err := adm.AlterTopicConfigs(kadmCtx(t), []kadm.AlterConfig{{Op: kadm.SetConfig, Name: name, Value: kadm.StringPtr(value)}}, topic)
	require.NoError(t, err)
	return resps[0].Err
}

// TestKadmTopicConfigs walks a topic through its configs with kadm: the
// defaults, a segment size that rolls a segment every two batches, a
// batch limit that refuses a large record with MESSAGE_TOO_LARGE, a
// retention limit that deletes the oldest segments at once, a validation
// that changes nothing, a restart that keeps every value, and
// AlterTopicConfigsState replacing the whole set. The broker's configs
// are read-only.
func TestKadmTopicConfigs(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := []func(*broker.Config){kgoConfig(map[string]int32{"orders": 1}), func(cfg *broker.Config) { cfg.DataDir = dir }}
	b := startBroker(t, cfg...)
	adm := b.admin(t)
	ctx := kadmCtx(t)

	require.Equal(t, map[string]string{
		"max.message.bytes": "1048588@DEFAULT_CONFIG", "retention.bytes": "-1@DEFAULT_CONFIG", "segment.bytes": "67108864@DEFAULT_CONFIG",
	}, topicConfigs(t, adm, "orders"))
	brokers, err := adm.DescribeBrokerConfigs(ctx, 0)
	require.NoError(t, err)
	rc, err := brokers.On("0", nil)
	require.NoError(t, err)
	require.NoError(t, rc.Err)
	broker := map[string]string{}
	for _, c := range rc.Configs {
		broker[c.Key] = c.MaybeValue() + "@" + c.Source.String()
	}
	require.Equal(t, "67108864@STATIC_BROKER_CONFIG", broker["log.segment.bytes"])
	require.Equal(t, "true@STATIC_BROKER_CONFIG", broker["auto.create.topics.enable"])
	altered, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "log.segment.bytes", Value: kadm.StringPtr("1048576")}}, 0)
	require.NoError(t, err)
	require.ErrorIs(t, altered[0].Err, kerr.InvalidRequest)
	require.Contains(t, altered[0].ErrMessage, "Cannot update these configs dynamically")

	require.NoError(t, alterOne(t, adm, "orders", "segment.bytes", "1024"))
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.DefaultProduceTopic("orders"), kgo.ProducerBatchCompression(kgo.NoCompression()))
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	value := strings.Repeat("v", 300)
	for range 7 {
		require.NoError(t, cl.ProduceSync(ctx, &kgo.Record{Value: []byte(value)}).FirstErr())
	}
	st, err := b.Log().PartitionStats("orders", 0)
	require.NoError(t, err)
	batch := st.Bytes / 7
	require.Equal(t, 7*batch, st.Bytes, "seven batches of one size")
	perSegment := 1024 / batch
	require.Equal(t, int64(2), perSegment, "a %d-byte batch: two to a segment", batch)
	require.Equal(t, 4, st.Segments, "segments of two batches, two, two and one")

	_, err = adm.ValidateAlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "max.message.bytes", Value: kadm.StringPtr("200")}}, "orders")
	require.NoError(t, err)
	require.NoError(t, cl.ProduceSync(ctx, &kgo.Record{Value: []byte(value)}).FirstErr(), "a validation changes nothing")
	require.NoError(t, alterOne(t, adm, "orders", "max.message.bytes", "200"))
	err = cl.ProduceSync(ctx, &kgo.Record{Value: []byte(value)}).FirstErr()
	require.ErrorIs(t, err, kerr.MessageTooLarge)
	require.NoError(t, cl.ProduceSync(ctx, &kgo.Record{Value: []byte("small")}).FirstErr())

	// 8 batches of the large size and a small one: 2+2+2+2+1 in segments.
	// Retention 1024 deletes the oldest while at least 1024 bytes stay.
	st, err = b.Log().PartitionStats("orders", 0)
	require.NoError(t, err)
	require.NoError(t, alterOne(t, adm, "orders", "retention.bytes", "1024"))
	left := st.Bytes
	start := int64(0)
	for left-2*batch >= 1024 {
		left -= 2 * batch
		start += 2
	}
	starts, err := adm.ListStartOffsets(ctx, "orders")
	require.NoError(t, err)
	got, _ := starts.Lookup("orders", 0)
	require.Equal(t, start, got.Offset, "retention ran when the config changed")
	require.Greater(t, start, int64(0))

	appended, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.AppendConfig, Name: "retention.bytes", Value: kadm.StringPtr("1")}}, "orders")
	require.NoError(t, err)
	require.ErrorIs(t, appended[0].Err, kerr.InvalidConfig)
	bad, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "retention.ms", Value: kadm.StringPtr("1")}}, "orders")
	require.NoError(t, err)
	require.ErrorIs(t, bad[0].Err, kerr.InvalidConfig)
	want := map[string]string{
		"max.message.bytes": "200@DYNAMIC_TOPIC_CONFIG", "retention.bytes": "1024@DYNAMIC_TOPIC_CONFIG", "segment.bytes": "1024@DYNAMIC_TOPIC_CONFIG",
	}
	require.Equal(t, want, topicConfigs(t, adm, "orders"))

	require.NoError(t, b.Close())
	b = startBroker(t, cfg...)
	adm = b.admin(t)
	require.Equal(t, want, topicConfigs(t, adm, "orders"), "the configs survive a restart")
	require.Equal(t, records.TopicSettings{SegmentBytes: 1024, RetentionBytes: 1024, MaxMessageBytes: 200}, b.Log().Settings("orders"))

	state, err := adm.AlterTopicConfigsState(kadmCtx(t), []kadm.AlterConfig{{Name: "retention.bytes", Value: kadm.StringPtr("-1")}}, "orders")
	require.NoError(t, err)
	require.NoError(t, state[0].Err)
	require.Equal(t, map[string]string{
		"max.message.bytes": "1048588@DEFAULT_CONFIG", "retention.bytes": "-1@DYNAMIC_TOPIC_CONFIG", "segment.bytes": "67108864@DEFAULT_CONFIG",
	}, topicConfigs(t, adm, "orders"), "AlterConfigs replaces the whole set")
	require.Equal(t, b.Log().Defaults(), b.Log().Settings("orders"))
}

// TestKadmCreateTopicWithConfigs: CreateTopic's configs are the topic's
// from its first record, a bad one creates nothing, and an unknown topic
// has no configs.
func TestKadmCreateTopicWithConfigs(t *testing.T) {
	t.Parallel()
	b := startBroker(t, kgoConfig(nil))
	adm := b.admin(t)
	ctx := kadmCtx(t)
	created, err := adm.CreateTopic(ctx, 2, 1, map[string]*string{"max.message.bytes": kadm.StringPtr("100")}, "small")
	require.NoError(t, err)
	require.NoError(t, created.Err)
	require.Equal(t, "100@DYNAMIC_TOPIC_CONFIG", topicConfigs(t, adm, "small")["max.message.bytes"])
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.DefaultProduceTopic("small"), kgo.ProducerBatchCompression(kgo.NoCompression()))
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	err = cl.ProduceSync(ctx, &kgo.Record{Value: []byte(strings.Repeat("x", 200))}).FirstErr()
	require.ErrorIs(t, err, kerr.MessageTooLarge)

	_, err = adm.CreateTopic(ctx, 1, 1, map[string]*string{"segment.bytes": kadm.StringPtr("-1")}, "refused")
	require.ErrorIs(t, err, kerr.InvalidConfig)
	topics, err := adm.ListTopics(ctx)
	require.NoError(t, err)
	require.Equal(t, []string{"small"}, topics.Names())

	rcs, err := adm.DescribeTopicConfigs(ctx, "nope")
	require.NoError(t, err)
	rc, _ := rcs.On("nope", nil)
	require.ErrorIs(t, rc.Err, kerr.UnknownTopicOrPartition)
}
