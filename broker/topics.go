package broker

import (
	"fmt"
	"maps"
	"slices"

	"github.com/minibroker/minibroker/catalog"
	"github.com/minibroker/minibroker/records"
	"github.com/minibroker/minibroker/server"
	"github.com/minibroker/minibroker/topics"
)

// CreateTopic creates topic name with partitions partitions and configs
// of its own (nil: the broker's defaults), as CreateTopics does over the
// wire, with its checks and errors: a name Kafka refuses wraps
// catalog.ErrInvalidTopic, a taken one catalog.ErrTopicExists, fewer than
// one partition (or more than the broker holds) catalog.ErrInvalidPartitions,
// and a config the topic cannot have, or a value it cannot take,
// topics.ErrInvalidConfig with Kafka's message (its names:
// retention.bytes, segment.bytes, max.message.bytes). On an error
// nothing is created. The topic is durable in the data dir before
// CreateTopic returns.
func (b *Broker) CreateTopic(name string, partitions int32, configs map[string]string) error {
	_, err := b.topics.Create(name, partitions, configs, false)
	return err
}

// DeleteTopic deletes a topic, as DeleteTopics does over the wire: its
// catalog entry, logs and committed offsets, and a new generation for
// the groups that subscribe to it. An unknown topic is an error wrapping
// catalog.ErrUnknownTopic.
func (b *Broker) DeleteTopic(name string) error {
	_, err := b.topics.Delete(name)
	return err
}

// PartitionInfo is one partition of a topic at one moment.
type PartitionInfo struct {
	Partition int32
	// Leader is the node that leads the partition: this broker, the only
	// node of its cluster (server.NodeID).
	Leader int32
	// LogStartOffset is the first offset the partition holds; retention
	// and DeleteRecords move it.
	LogStartOffset int64
	// HighWatermark is the offset after the last durable record: what
	// read_uncommitted consumers read up to.
	HighWatermark int64
	// LastStableOffset is what read_committed consumers read up to: the
	// first offset of the oldest open transaction, else the high
	// watermark.
	LastStableOffset int64
	// Bytes is the size of the partition's segment files.
	Bytes int64
}

// Partitions returns each partition of topic, in partition order. An
// unknown topic is an error wrapping catalog.ErrUnknownTopic.
func (b *Broker) Partitions(topic string) ([]PartitionInfo, error) {
	n, ok := b.catalog.Partitions(topic)
	if !ok {
		return nil, fmt.Errorf("%w: %q", catalog.ErrUnknownTopic, topic)
	}
	out := make([]PartitionInfo, 0, n)
	for p := range n {
		st, err := b.log.PartitionStats(topic, p)
		if err != nil {
			return nil, fmt.Errorf("topic %q partition %d: %w", topic, p, err)
		}
		out = append(out, PartitionInfo{
			Partition: p, Leader: server.NodeID,
			LogStartOffset: st.LogStartOffset, HighWatermark: st.HighWatermark,
			LastStableOffset: st.LastStableOffset, Bytes: st.Bytes,
		})
	}
	return out, nil
}

// validateTopics checks Config.Topics and Config.TopicConfigs: partition
// counts of at least one, and configs only for topics Topics names, each
// a config a topic can have with a value it can take.
func validateTopics(cfg *Config) error {
	for name, n := range cfg.Topics {
		if n < 1 {
			return fmt.Errorf("broker: topic %q: %d partitions; want at least 1", name, n)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(cfg.TopicConfigs)) {
		if _, ok := cfg.Topics[name]; !ok {
			return fmt.Errorf("broker: TopicConfigs names topic %q, which Topics does not", name)
		}
		if _, _, err := topics.Resolve(records.TopicSettings{}, cfg.TopicConfigs[name]); err != nil {
			return fmt.Errorf("broker: topic %q: %w", name, err)
		}
	}
	return nil
}
