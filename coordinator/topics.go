package coordinator

import (
	"fmt"
	"maps"

	"github.com/minibroker/minibroker/catalog"
)

// Topics is what the coordinator needs of the topic catalog: a topic's
// partition count. *catalog.Catalog implements it; StaticTopics is a fixed
// one for tests and tools. The coordinator only reads it: topics are
// created by the catalog's owner, never here. It is a catalog.Counter:
// whether a partition exists is catalog.HasPartition over it.
type Topics interface {
	// Partitions returns the partition count of topic; ok is false for
	// an unknown topic.
	Partitions(topic string) (n int32, ok bool)
}

// TopicLister is a Topics that can list every topic with its partition
// count (*catalog.Catalog and StaticTopics are): regex subscriptions are
// matched against it.
type TopicLister interface {
	Counts() map[string]int32
}

// StaticTopics is a fixed catalog: topic name to partition count.
type StaticTopics map[string]int32

// Partitions returns the count of topic.
func (t StaticTopics) Partitions(topic string) (int32, bool) {
	n, ok := t[topic]
	return n, ok
}

// Counts returns a copy of the catalog.
func (t StaticTopics) Counts() map[string]int32 { return maps.Clone(t) }

// checkTopic rejects a subscription to a name Kafka would not accept as a
// topic (catalog.ErrInvalidTopic), or to a topic the catalog lacks, as the
// chapter's join does (ErrUnknownTopic).
func (c *Coordinator) checkTopic(t string) error {
	if err := checkTopicName(t); err != nil {
		return err
	}
	if _, ok := c.topics.Partitions(t); !ok {
		return fmt.Errorf("%w: subscription to %q", ErrUnknownTopic, t)
	}
	return nil
}

// checkTopicName rejects a subscription to a name Kafka would not accept
// as a topic (the catalog's rule): catalog.ErrInvalidTopic.
func checkTopicName(t string) error {
	if !catalog.ValidTopicName(t) {
		return fmt.Errorf("%w: subscription to %q", catalog.ErrInvalidTopic, t)
	}
	return nil
}

// partitionCounts returns the partition count of every topic some member
// subscribes to, for the assignor. A topic the catalog lacks (deleted
// since a member subscribed to it) is left out, so nobody is assigned it.
func (c *Coordinator) partitionCounts(subs map[string][]string) map[string]int32 {
	out := make(map[string]int32)
	for _, topics := range subs {
		for _, t := range topics {
			if _, done := out[t]; done {
				continue
			}
			if n, ok := c.topics.Partitions(t); ok {
				out[t] = n
			}
		}
	}
	return out
}
