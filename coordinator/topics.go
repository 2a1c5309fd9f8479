package coordinator

import (
	"fmt"
	"maps"
)

// maxTopicNameLength is Kafka's limit (Topic.MAX_NAME_LENGTH).
const maxTopicNameLength = 249

// CreateTopic adds a topic with partitions partitions to the catalog,
// unless the catalog would then hold more than MaxCatalogPartitions
// partitions (ErrInvalidPartitions). Topics are never deleted, and existing groups are not rebalanced: a
// subscriber sees the new topic at its next join, as in the chapter.
func (c *Coordinator) CreateTopic(name string, partitions int32) error {
	if err := validateTopic(name, partitions); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.topics[name]; ok {
		return fmt.Errorf("%w: %q", ErrTopicExists, name)
	}
	if n := catalogPartitions(c.topics) + int64(partitions); n > MaxCatalogPartitions {
		return fmt.Errorf("%w: %d for %q would make %d partitions in all, limit %d", ErrInvalidPartitions, partitions, name, n, MaxCatalogPartitions)
	}
	c.topics[name] = partitions
	return nil
}

// Topics returns a copy of the catalog: topic name to partition count.
func (c *Coordinator) Topics() map[string]int32 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.topics)
}

// ValidTopicName reports whether Kafka would accept name as a topic
// (Topic.validate): 1 to 249 characters from [a-zA-Z0-9._-], and neither
// "." nor "..".
func ValidTopicName(name string) bool {
	if name == "" || name == "." || name == ".." || len(name) > maxTopicNameLength {
		return false
	}
	for i := 0; i < len(name); i++ {
		b := name[i]
		if !('a' <= b && b <= 'z' || 'A' <= b && b <= 'Z' || '0' <= b && b <= '9' || b == '.' || b == '_' || b == '-') {
			return false
		}
	}
	return true
}

func validateTopic(name string, partitions int32) error {
	if !ValidTopicName(name) {
		return fmt.Errorf("%w: %q", ErrInvalidTopic, name)
	}
	if partitions < 1 {
		return fmt.Errorf("%w: %d for %q", ErrInvalidPartitions, partitions, name)
	}
	return nil
}
