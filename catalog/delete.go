package catalog

import (
	"errors"
	"fmt"
)

// ErrUnknownTopic (UNKNOWN_TOPIC_OR_PARTITION): Delete of a topic the
// catalog does not have.
var ErrUnknownTopic = errors.New("unknown topic")

// state is a catalog as loaded: FileName's content with the journal
// applied.
type state struct {
	topics   map[string]Topic
	ids      map[ID]string
	deleting map[string]ID
	seq      uint64
}

func newState() *state {
	return &state{topics: map[string]Topic{}, ids: map[ID]string{}, deleting: map[string]ID{}}
}

// apply applies one journal line, strictly (see loadJournal).
func (st *state) apply(e entry) error {
	t := e.t
	switch e.op {
	case "":
		if old, ok := st.topics[t.Name]; ok {
			if e.seq == 0 && sameTopic(old, t) {
				return nil // a line from before seqs, folded already
			}
			return fmt.Errorf("topic %q is also in %s, differently", t.Name, FileName)
		}
		if other, ok := st.ids[t.ID]; ok {
			return fmt.Errorf("topics %q and %q share id %s", other, t.Name, t.ID)
		}
		if _, ok := st.deleting[t.Name]; ok {
			return fmt.Errorf("topic %q created while still being deleted", t.Name)
		}
		st.topics[t.Name], st.ids[t.ID] = t, t.Name
	case opDelete:
		old, ok := st.topics[t.Name]
		if !ok || old.ID != t.ID {
			return fmt.Errorf("delete of topic %q id %s, which the catalog does not have", t.Name, t.ID)
		}
		delete(st.topics, t.Name)
		delete(st.ids, t.ID)
		st.deleting[t.Name] = t.ID
	case opPartitions:
		old, ok := st.topics[t.Name]
		if !ok || old.ID != t.ID || t.Partitions <= old.Partitions {
			return fmt.Errorf("%d partitions for topic %q id %s, which the catalog does not have with fewer", t.Partitions, t.Name, t.ID)
		}
		old.Partitions = t.Partitions
		st.topics[t.Name] = old
	case opConfigs:
		old, ok := st.topics[t.Name]
		if !ok || old.ID != t.ID {
			return fmt.Errorf("configs of topic %q id %s, which the catalog does not have", t.Name, t.ID)
		}
		old.Configs = t.Configs
		st.topics[t.Name] = old
	case opPurge:
		if id, ok := st.deleting[t.Name]; !ok || id != t.ID {
			return fmt.Errorf("purge of topic %q id %s, which is not being deleted", t.Name, t.ID)
		}
		delete(st.deleting, t.Name)
	}
	st.seq = max(st.seq, e.seq)
	return nil
}

// Delete takes a topic out of the catalog: it appends the delete to the
// journal and syncs it, and only then hides the topic. From then on the
// topic is gone, whatever happens: a restart finds it among Deleting
// until Purge says its data is removed, and nobody can create a topic of
// that name before. It returns the topic as it was.
func (c *Catalog) Delete(name string) (Topic, error) {
	c.create.Lock()
	defer c.create.Unlock()
	c.mu.RLock()
	t, ok := c.topics[name]
	c.mu.RUnlock()
	if !ok {
		return Topic{}, fmt.Errorf("%w: %q", ErrUnknownTopic, name)
	}
	if err := c.write(entry{op: opDelete, t: Topic{Name: name, ID: t.ID}}); err != nil {
		return Topic{}, err
	}
	c.mu.Lock()
	delete(c.topics, name)
	delete(c.byID, t.ID)
	c.deleting[name] = t.ID
	c.partitions -= int64(t.Partitions)
	c.mu.Unlock()
	c.maybeFold()
	c.logger.Info("topic deleted", "topic", name, "partitions", t.Partitions, "topic_id", t.ID.String())
	return t, nil
}

// Purge ends the pending delete of topic name, id: its owner has removed
// every piece of its data. The name is free again.
func (c *Catalog) Purge(name string, id ID) error {
	c.create.Lock()
	defer c.create.Unlock()
	c.mu.RLock()
	have, ok := c.deleting[name]
	c.mu.RUnlock()
	if !ok || have != id {
		return fmt.Errorf("%w: %q is not being deleted", ErrUnknownTopic, name)
	}
	if err := c.write(entry{op: opPurge, t: Topic{Name: name, ID: id}}); err != nil {
		return err
	}
	c.mu.Lock()
	delete(c.deleting, name)
	c.mu.Unlock()
	c.maybeFold()
	return nil
}

// Deleting returns the deleted topics whose data is not purged yet, by
// name: at start-up, the deletes a stop interrupted.
func (c *Catalog) Deleting() map[string]ID {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := make(map[string]ID, len(c.deleting))
	for name, id := range c.deleting {
		out[name] = id
	}
	return out
}

// write appends e to the journal with the next seq. Called with create
// held.
func (c *Catalog) write(e entry) error {
	if c.journal == nil {
		return nil
	}
	e.seq = c.seq + 1
	if err := c.journal.append(e); err != nil {
		return fmt.Errorf("%w: %w", ErrStorage, err)
	}
	c.seq++
	return nil
}
