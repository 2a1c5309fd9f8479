package catalog

import "fmt"

// CheckPartitions reports whether AddPartitions(name, total) would be
// accepted now, without changing anything (CreatePartitions with
// ValidateOnly).
func (c *Catalog) CheckPartitions(name string, total int32) (Topic, error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.checkPartitions(name, total)
}

// checkPartitions validates a new partition count. Called with mu held
// for reading.
func (c *Catalog) checkPartitions(name string, total int32) (Topic, error) {
	t, ok := c.topics[name]
	if !ok {
		return Topic{}, fmt.Errorf("%w: %q", ErrUnknownTopic, name)
	}
	if total <= t.Partitions {
		return Topic{}, fmt.Errorf("%w: topic %q has %d partitions; the new count %d must be larger", ErrInvalidPartitions, name, t.Partitions, total)
	}
	if n := c.partitions + int64(total-t.Partitions); n > int64(c.maxPartitions) {
		return Topic{}, fmt.Errorf("%w: %d partitions for %q would make %d partitions in all, limit %d", ErrInvalidPartitions, total, name, n, c.maxPartitions)
	}
	return t, nil
}

// AddPartitions raises topic name's partition count to total: it
// validates the count, runs Config.Prepare for the topic at its new
// count (the broker creates the new partitions' logs), appends the new
// count to the journal and syncs it, and only then shows it. On any error
// the count is unchanged (Config.AbandonFrom removes the partitions
// past it that Prepare made). It returns the
// topic as it now is.
func (c *Catalog) AddPartitions(name string, total int32) (Topic, error) {
	c.create.Lock()
	defer c.create.Unlock()
	c.mu.RLock()
	old, err := c.checkPartitions(name, total)
	c.mu.RUnlock()
	if err != nil {
		return Topic{}, err
	}
	t := old
	t.Partitions = total
	if c.prepare != nil {
		if err := c.prepare(t); err != nil { // it removed what it made
			return Topic{}, fmt.Errorf("%w: preparing %q: %w", ErrStorage, name, err)
		}
	}
	if err := c.write(entry{op: opPartitions, t: t}); err != nil {
		if c.abandonFrom != nil {
			c.abandonFrom(t, old.Partitions)
		}
		return Topic{}, err
	}
	c.mu.Lock()
	c.topics[name] = t
	c.partitions += int64(total - old.Partitions)
	c.mu.Unlock()
	c.maybeFold()
	c.logger.Info("partitions added", "topic", name, "partitions", total, "were", old.Partitions)
	return t, nil
}
