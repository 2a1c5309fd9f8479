package catalog

import (
	"errors"
	"fmt"
	"maps"
)

// Bounds of a topic's configs, so that neither a request nor a damaged
// file can make the catalog hold without limit. Kafka's controller
// bounds a value at Short.MAX_VALUE characters.
const (
	// MaxConfigs bounds the configs of one topic.
	MaxConfigs = 64
	// MaxConfigName bounds a config's name, in bytes.
	MaxConfigName = 255
	// MaxConfigValue bounds a config's value, in bytes.
	MaxConfigValue = 32767
)

// ErrInvalidConfigs (INVALID_CONFIG): configs past the bounds above. The
// catalog stores names and values as given; which names and values a
// topic may have is its caller's rule (topics/).
var ErrInvalidConfigs = errors.New("invalid topic configs")

// opConfigs is the journal's op that replaces a topic's configs.
const opConfigs = "configs"

// checkConfigs applies the bounds.
func checkConfigs(configs map[string]string) error {
	if len(configs) > MaxConfigs {
		return fmt.Errorf("%w: %d configs, at most %d", ErrInvalidConfigs, len(configs), MaxConfigs)
	}
	for name, value := range configs {
		switch {
		case name == "" || len(name) > MaxConfigName:
			return fmt.Errorf("%w: a name of %d bytes, want 1 to %d", ErrInvalidConfigs, len(name), MaxConfigName)
		case len(value) > MaxConfigValue:
			return fmt.Errorf("%w: %s: a value of %d bytes, at most %d", ErrInvalidConfigs, name, len(value), MaxConfigValue)
		}
	}
	return nil
}

// ownConfigs returns a copy of configs that no caller holds, nil for
// none.
func ownConfigs(configs map[string]string) map[string]string {
	if len(configs) == 0 {
		return nil
	}
	return maps.Clone(configs)
}

// sameTopic reports whether a and b are the same topic in every field.
func sameTopic(a, b Topic) bool {
	return a.Name == b.Name && a.Partitions == b.Partitions && a.ID == b.ID && maps.Equal(a.Configs, b.Configs)
}

// SetConfigs replaces topic name's configs with configs (empty: none of
// its own): it appends them to the journal and syncs it, then runs apply
// (the broker hands the values to the partition logs) and only then
// shows them; all under the lock that orders creates and deletes, so that
// the logs see the configs in the catalog's order. It returns the topic
// as it now is. An unknown topic is ErrUnknownTopic; on any error
// nothing changed.
func (c *Catalog) SetConfigs(name string, configs map[string]string, apply func(Topic)) (Topic, error) {
	if err := checkConfigs(configs); err != nil {
		return Topic{}, err
	}
	c.create.Lock()
	defer c.create.Unlock()
	c.mu.RLock()
	t, ok := c.topics[name]
	c.mu.RUnlock()
	if !ok {
		return Topic{}, fmt.Errorf("%w: %q", ErrUnknownTopic, name)
	}
	t.Configs = ownConfigs(configs)
	if err := c.write(entry{op: opConfigs, t: t}); err != nil {
		return Topic{}, err
	}
	if apply != nil {
		apply(t)
	}
	c.mu.Lock()
	c.topics[name] = t
	c.mu.Unlock()
	c.maybeFold()
	c.logger.Info("topic configs set", "topic", name, "configs", len(t.Configs))
	return t, nil
}
