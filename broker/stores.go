package broker

import (
	"fmt"
	"log/slog"
	"maps"
	"path/filepath"
	"slices"
	"time"

	"github.com/minibroker/minibroker/catalog"
	"github.com/minibroker/minibroker/offsets"
	"github.com/minibroker/minibroker/records"
	"github.com/minibroker/minibroker/topics"
)

// openLog opens the partition logs of <data-dir>/logs, or logs in memory.
func openLog(cfg Config, logger *slog.Logger) (*records.Log, error) {
	logCfg := records.Config{Settings: cfg.RecordSettings, Logger: logger}
	if cfg.DataDir != "" {
		logCfg.Dir = filepath.Join(cfg.DataDir, LogsDir)
	}
	log, err := records.Open(logCfg)
	return log, withHint(err)
}

// LogsDir is the data directory's folder of partition logs.
const LogsDir = "logs"

// openCatalog opens the topic catalog, checks it against the partition
// logs (reconcile), and creates the configured topics that are missing. A
// topic that exists keeps its partition count. A topic created later gets
// its logs, with the settings of its configs, before anybody sees it
// (catalog.Config.Prepare; every topic's settings at start), and loses
// them again if the catalog cannot be saved (Abandon).
func openCatalog(cfg Config, logger *slog.Logger, log *records.Log) (*catalog.Catalog, error) {
	cat, err := catalog.Open(catalog.Config{Dir: cfg.DataDir, Logger: logger,
		Prepare:     func(t catalog.Topic) error { return topics.Prepare(log, t) },
		Abandon:     func(t catalog.Topic) { removeFrom(log, logger, t, 0) },
		AbandonFrom: func(t catalog.Topic, from int32) { removeFrom(log, logger, t, from) },
	})
	if err != nil {
		return nil, err
	}
	if err := topics.FinishLogs(cat, log, logger); err != nil {
		return nil, err
	}
	if cfg.DataDir != "" {
		if err := reconcile(cfg, logger, cat, log); err != nil {
			return nil, err
		}
	}
	if err := topics.ApplyConfigs(cat, log); err != nil {
		return nil, err
	}
	for _, name := range slices.Sorted(maps.Keys(cfg.Topics)) {
		if err := ensureTopic(cat, log, logger, name, cfg.Topics[name], cfg.TopicConfigs[name]); err != nil {
			return nil, err
		}
	}
	return cat, nil
}

// ensureTopic creates a topic Config.Topics names, with its configs,
// unless it exists; an existing one keeps its partition count and its
// configs, and a difference from what was asked is logged.
func ensureTopic(cat *catalog.Catalog, log *records.Log, logger *slog.Logger, name string, partitions int32, configs map[string]string) error {
	_, saved, err := topics.Resolve(log.Defaults(), configs) // as Kafka saves them: trimmed
	if err != nil {
		return fmt.Errorf("topic %q: %w", name, err)
	}
	if t, ok := cat.Lookup(name); ok {
		if t.Partitions != partitions {
			logger.Warn("topic exists with another partition count; keeping it", "topic", name, "partitions", t.Partitions, "asked", partitions)
		}
		if configs != nil && !maps.Equal(t.Configs, saved) {
			logger.Warn("topic exists with other configs; keeping them", "topic", name, "configs", t.Configs, "asked", saved)
		}
		return nil
	}
	_, err = cat.CreateWithConfigs(name, partitions, saved)
	return err
}

// removeFrom removes t's partitions from number from on, which a create
// or a partition add that could not be saved made.
func removeFrom(log *records.Log, logger *slog.Logger, t catalog.Topic, from int32) {
	for i := from; i < t.Partitions; i++ {
		if err := log.RemovePartition(records.TopicPartition{Topic: t.Name, Partition: i}); err != nil {
			logger.Warn("partition of a topic not saved not removed", "topic", t.Name, "partition", i, "err", err)
		}
	}
}

// openOffsets opens the offsets store of the data dir, or one in memory.
// observeSync, when not nil, times the journal's fsyncs (the admin side's
// metrics).
func openOffsets(cfg Config, logger *slog.Logger, observeSync func(time.Duration)) (offsetStore, error) {
	if cfg.DataDir == "" {
		return offsets.NewMemory(), nil
	}
	return offsets.Open(offsets.Config{Dir: cfg.DataDir, FS: cfg.OffsetsFS, Logger: logger, ObserveSync: observeSync})
}
