package catalog

// Counter is what knows topics' partition counts: *Catalog, and the
// coordinator's Topics (its fixed StaticTopics included).
type Counter interface {
	// Partitions returns the partition count of topic; ok is false for
	// an unknown topic.
	Partitions(topic string) (n int32, ok bool)
}

// HasPartition is the one partition-existence rule: topic is known to
// topics and p is one of its partitions, 0 to its count - 1. A request
// for any other partition is UNKNOWN_TOPIC_OR_PARTITION in Kafka.
func HasPartition(topics Counter, topic string, p int32) bool {
	n, ok := topics.Partitions(topic)
	return ok && p >= 0 && p < n
}

// HasPartition reports whether topic exists and has partition p (the
// package's HasPartition rule).
func (c *Catalog) HasPartition(topic string, p int32) bool { return HasPartition(c, topic, p) }
