package topics_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/minibroker/minibroker/catalog"
	"github.com/minibroker/minibroker/records"
	"github.com/minibroker/minibroker/topics"
)

var defaults = records.TopicSettings{SegmentBytes: 64 << 20, RetentionBytes: -1, MaxMessageBytes: 1048588}

// TestResolve reads each config as Kafka's ConfigDef does (trimmed, in
// range), keeps the defaults for the rest, and refuses unknown names and
// bad values with Kafka's message.
func TestResolve(t *testing.T) {
	t.Parallel()
	s, saved, err := topics.Resolve(defaults, map[string]string{"segment.bytes": " 2048 ", "retention.bytes": "-9", "max.message.bytes": "61"})
	require.NoError(t, err)
	require.Equal(t, records.TopicSettings{SegmentBytes: 2048, RetentionBytes: -1, MaxMessageBytes: 61}, s)
	require.Equal(t, map[string]string{"segment.bytes": "2048", "retention.bytes": "-9", "max.message.bytes": "61"}, saved)
	s, saved, err = topics.Resolve(defaults, nil)
	require.NoError(t, err)
	require.Equal(t, defaults, s)
	require.Empty(t, saved)
	s, _, err = topics.Resolve(defaults, map[string]string{"retention.bytes": "0"})
	require.NoError(t, err)
	require.Equal(t, int64(0), s.RetentionBytes)

	for configs, msg := range map[[2]string]string{
		{"segment.bytes", "1023"}:                  "Invalid value 1023 for configuration segment.bytes: Value must be at least 1024",
		{"segment.bytes", "2147483648"}:            "Invalid value 2147483648 for configuration segment.bytes: Not a number of type INT",
		{"segment.bytes", ""}:                      "Invalid value  for configuration segment.bytes: Not a number of type INT",
		{"max.message.bytes", "60"}:                "Invalid value 60 for configuration max.message.bytes: Value must be at least 61",
		{"retention.bytes", "lots"}:                "Invalid value lots for configuration retention.bytes: Not a number of type LONG",
		{"retention.ms", "1"}:                      "Unknown topic config name: retention.ms",
		{"message.max.bytes", "1048576"}:           "Unknown topic config name: message.max.bytes",
		{"retention.bytes", "9223372036854775808"}: "Not a number of type LONG",
	} {
		_, _, err := topics.Resolve(defaults, map[string]string{configs[0]: configs[1]})
		require.ErrorIs(t, err, topics.ErrInvalidConfig, msg)
		require.ErrorContains(t, err, msg)
	}
}

// TestValues lists every config, sorted, with the topic's own values
// marked and the defaults rendered as Kafka prints them.
func TestValues(t *testing.T) {
	t.Parallel()
	got := topics.Values(defaults, catalog.Topic{Name: "t", Configs: map[string]string{"retention.bytes": "4096"}})
	var rows [][4]string
	for _, v := range got {
		own := ""
		if v.Own {
			own = "own"
		}
		rows = append(rows, [4]string{v.Name, v.Value, v.Default, own})
	}
	require.Equal(t, [][4]string{
		{"max.message.bytes", "1048588", "1048588", ""},
		{"retention.bytes", "4096", "-1", "own"},
		{"segment.bytes", "67108864", "67108864", ""},
	}, rows)
	s, ok := topics.Lookup("retention.bytes")
	require.True(t, ok)
	require.Equal(t, "log.retention.bytes", s.Broker)
	_, ok = topics.Lookup("cleanup.policy")
	require.False(t, ok)
}

// TestPrepareAndApplyConfigs: Prepare makes a topic's partitions with
// the settings of its configs; ApplyConfigs gives every topic of a
// catalog its settings (at start-up) and names a topic whose saved
// configs are not valid.
func TestPrepareAndApplyConfigs(t *testing.T) {
	t.Parallel()
	log, err := records.Open(records.Config{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = log.Close() })
	require.NoError(t, topics.Prepare(log, catalog.Topic{Name: "a", Partitions: 2, Configs: map[string]string{"segment.bytes": "4096"}}))
	_, _, err = log.Offsets("a", 1)
	require.NoError(t, err)
	require.Equal(t, int64(4096), log.Settings("a").SegmentBytes)
	require.ErrorIs(t, topics.Prepare(log, catalog.Topic{Name: "b", Partitions: 1, Configs: map[string]string{"x": "1"}}), topics.ErrInvalidConfig)
	_, _, err = log.Offsets("b", 0)
	require.ErrorIs(t, err, records.ErrUnknownPartition, "a bad config makes no partition")

	cat, err := catalog.Open(catalog.Config{})
	require.NoError(t, err)
	_, err = cat.CreateWithConfigs("c", 1, map[string]string{"max.message.bytes": "1000"})
	require.NoError(t, err)
	_, err = cat.Create("d", 1)
	require.NoError(t, err)
	require.NoError(t, log.CreatePartitions("c", 1))
	require.NoError(t, topics.ApplyConfigs(cat, log))
	require.Equal(t, int32(1000), log.Settings("c").MaxMessageBytes)
	require.Equal(t, log.Defaults(), log.Settings("d"))

	_, err = cat.CreateWithConfigs("e", 1, map[string]string{"segment.bytes": "1"})
	require.NoError(t, err, "the catalog stores what it is given")
	err = topics.ApplyConfigs(cat, log)
	require.ErrorIs(t, err, topics.ErrInvalidConfig)
	require.ErrorContains(t, err, `topic "e"`)
}
