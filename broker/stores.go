package broker

import (
	"log/slog"
	"maps"
	"path/filepath"
	"slices"

	"github.com/minibroker/minibroker/admin"
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
		want := cfg.Topics[name]
		if have, ok := cat.Partitions(name); ok {
			if have != want {
				logger.Warn("topic exists with another partition count; keeping it", "topic", name, "partitions", have, "asked", want)
			}
			continue
		}
		if _, err := cat.Create(name, want); err != nil {
			return nil, err
		}
	}
	return cat, nil
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
// With the admin API on, the recorder times the journal's fsyncs.
func openOffsets(cfg Config, logger *slog.Logger, recorder *admin.Recorder) (offsetStore, error) {
	if cfg.DataDir == "" {
		return offsets.NewMemory(), nil
	}
	storeCfg := offsets.Config{Dir: cfg.DataDir, FS: cfg.OffsetsFS, Logger: logger}
	if recorder != nil {
		storeCfg.ObserveSync = recorder.Metrics().ObserveFsync
	}
	return offsets.Open(storeCfg)
}
