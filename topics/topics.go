// Package topics carries out the topic changes that reach past the
// catalog: deleting a topic (its catalog entry, its partition logs, its
// committed offsets, the groups that subscribe to it) and adding
// partitions to one. The Kafka server and the admin API both call it, so
// that a topic is deleted one way whichever asks.
//
// A delete is durable from its first step, the catalog's journal line;
// every later step finishes it and may be run again. At start-up Finish
// runs the later steps of every delete a stop interrupted, so a kill at
// any point leaves the whole topic (before the journal line) or none of
// it (after the restart).
package topics

import (
	"errors"
	"fmt"
	"log/slog"

	"github.com/minibroker/minibroker/catalog"
	"github.com/minibroker/minibroker/coordinator"
	"github.com/minibroker/minibroker/records"
)

// Admin changes topics. Its methods are safe for concurrent use.
type Admin struct {
	Catalog     *catalog.Catalog
	Log         *records.Log
	Coordinator *coordinator.Coordinator
	Logger      *slog.Logger // nil: discard
}

// step is a test's hook before a delete ("start") and after each of its
// steps ("journaled", "logs", "offsets"); the crash test kills the
// process there.
var step = func(string) {}

// Delete deletes topic name: the catalog's journal line (from then on the
// topic is gone, for clients and for a restart), a new generation for
// every group that subscribes to it (reason "topic deleted"), its
// partition logs, every group's committed offsets of it, and last the
// catalog's purge, which frees the name. An unknown topic is
// catalog.ErrUnknownTopic and changes nothing. A failure after the
// journal line is logged and left for the next start to finish: the
// delete itself has happened.
func (a *Admin) Delete(name string) (catalog.Topic, error) {
	if !catalog.ValidTopicName(name) {
		return catalog.Topic{}, fmt.Errorf("%w: %q", catalog.ErrInvalidTopic, name)
	}
	step("start")
	t, err := a.Catalog.Delete(name)
	if err != nil {
		return catalog.Topic{}, err
	}
	step("journaled")
	a.Coordinator.TopicsChanged(coordinator.ReasonTopicDeleted, name)
	if err := a.finish(name, t.ID); err != nil {
		a.logger().Error("deleted topic's data not all removed; the next start finishes it", "topic", name, "err", err)
	}
	return t, nil
}

// finish runs a delete's steps after the journal line.
func (a *Admin) finish(name string, id catalog.ID) error {
	if _, err := a.Log.DeleteTopic(name); err != nil {
		return err
	}
	step("logs")
	if _, err := a.Coordinator.DeleteTopicOffsets(name); err != nil {
		return err
	}
	step("offsets")
	return a.Catalog.Purge(name, id)
}

// FinishLogs removes the partition logs of every delete the catalog has
// pending: at start-up, before the catalog and the logs are reconciled
// (which would otherwise find records no topic owns).
func FinishLogs(cat *catalog.Catalog, log *records.Log, logger *slog.Logger) error {
	for name := range cat.Deleting() {
		n, err := log.DeleteTopic(name)
		if err != nil {
			return fmt.Errorf("finishing the delete of topic %q: %w", name, err)
		}
		if logger != nil {
			logger.Info("finishing an interrupted topic delete", "topic", name, "partitions_removed", n)
		}
	}
	return nil
}

// Finish ends every delete the catalog has pending, once the
// coordinator is up: the offsets and the purge (FinishLogs has run).
func (a *Admin) Finish() error {
	var errs []error
	for name, id := range a.Catalog.Deleting() {
		errs = append(errs, a.finish(name, id))
	}
	return errors.Join(errs...)
}

func (a *Admin) logger() *slog.Logger {
	if a.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return a.Logger
}

// AddPartitions raises topic name's partition count to total (the
// catalog saves it after the new partitions' logs exist) and gives a new
// generation, reason "partitions added", to exactly the groups that
// subscribe to it, whose assignment then covers the new partitions. With
// validateOnly it only checks. It returns the topic as it is after.
func (a *Admin) AddPartitions(name string, total int32, validateOnly bool) (catalog.Topic, error) {
	if validateOnly {
		return a.Catalog.CheckPartitions(name, total)
	}
	t, err := a.Catalog.AddPartitions(name, total)
	if err != nil {
		return catalog.Topic{}, err
	}
	a.Coordinator.TopicsChanged(coordinator.ReasonPartitionsAdded, name)
	return t, nil
}
