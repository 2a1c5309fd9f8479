package broker

import (
	"log/slog"
	"maps"
	"slices"

	"github.com/minibroker/minibroker/admin"
	"github.com/minibroker/minibroker/internal/catalog"
	"github.com/minibroker/minibroker/offsets"
)

// openCatalog opens the topic catalog and creates the configured topics
// that are missing. A topic that exists keeps its partition count.
func openCatalog(cfg Config, logger *slog.Logger) (*catalog.Catalog, error) {
	cat, err := catalog.Open(catalog.Config{Dir: cfg.DataDir, Logger: logger})
	if err != nil {
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
