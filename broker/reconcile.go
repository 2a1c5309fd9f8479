package broker

import (
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"

	"github.com/minibroker/minibroker/catalog"
	"github.com/minibroker/minibroker/records"
)

// acceptHint ends every start-up refusal over missing data.
const acceptHint = "restore the missing files from a backup, or start with --accept-data-loss (broker.Config.AcceptDataLoss) to start without them"

// withHint adds to an error of records.Open that says acknowledged records
// are missing how to proceed.
func withHint(err error) error {
	if errors.Is(err, records.ErrDataLoss) {
		return fmt.Errorf("%w; %s", err, acceptHint)
	}
	return err
}

// reconcile makes the catalog and the partition logs agree at start-up,
// or refuses to start where they disagree over records that were
// acknowledged:
//
//   - a partition the catalog has and the logs do not: its directory was
//     deleted. Refused, unless the log directory is new (a data dir from
//     before partition logs existed: they are created empty) or
//     AcceptDataLoss (created empty, logged at Error);
//   - a partition the logs have and the catalog does not, that never held
//     a record: debris of a create that failed before the catalog was
//     saved. Removed, logged at Warn;
//   - one that holds or held records: the catalog lost it (topics.json
//     deleted or replaced). Refused, unless AcceptDataLoss (set aside
//     under a name Open passes over, logged at Error).
func reconcile(cfg Config, logger *slog.Logger, cat *catalog.Catalog, log *records.Log) error {
	logsDir := filepath.Join(cfg.DataDir, LogsDir)
	owned := map[records.TopicPartition]bool{}
	var missing []records.TopicPartition
	for _, t := range cat.List() {
		for i := range t.Partitions {
			tp := records.TopicPartition{Topic: t.Name, Partition: i}
			owned[tp] = true
			if _, err := log.PartitionStats(t.Name, i); err != nil {
				missing = append(missing, tp)
			}
		}
	}
	var losses []string
	switch {
	case len(missing) == 0:
	case log.Fresh():
		logger.Warn("no partition logs yet; creating them empty for the catalog's topics", "dir", logsDir, "partitions", len(missing))
	case cfg.AcceptDataLoss:
		for _, tp := range missing {
			logger.Error("partition directory missing; creating it empty as told", "file", filepath.Join(logsDir, tp.String()), "catalog", cat.Path())
		}
	default:
		for _, tp := range missing {
			losses = append(losses, fmt.Sprintf("the catalog %s has partition %d of topic %q, but its directory %s is missing",
				cat.Path(), tp.Partition, tp.Topic, filepath.Join(logsDir, tp.String())))
		}
	}
	for _, tp := range log.Partitions() {
		if owned[tp] {
			continue
		}
		dir := filepath.Join(logsDir, tp.String())
		st, err := log.PartitionStats(tp.Topic, tp.Partition)
		if err != nil {
			return err
		}
		if st.LogEndOffset == 0 && st.LogStartOffset == 0 {
			if err := log.RemovePartition(tp); err != nil {
				return fmt.Errorf("broker: remove %s: %w", dir, err)
			}
			logger.Warn("removed a partition directory no topic owns, left empty by a create that failed", "file", dir)
			continue
		}
		what := fmt.Sprintf("no topic %q", tp.Topic)
		if n, ok := cat.Partitions(tp.Topic); ok {
			what = fmt.Sprintf("topic %q with %d partitions", tp.Topic, n)
		}
		if !cfg.AcceptDataLoss {
			losses = append(losses, fmt.Sprintf("%s holds offsets %d to %d, but the catalog %s has %s (topics.json deleted or replaced?)",
				dir, st.LogStartOffset, st.LogEndOffset, cat.Path(), what))
			continue
		}
		to, err := log.SetAside(tp)
		if err != nil {
			return err
		}
		logger.Error("records no topic owns set aside as told", "file", dir, "to", to,
			"log_start", st.LogStartOffset, "log_end", st.LogEndOffset, "catalog", cat.Path())
	}
	if len(losses) > 0 {
		shown := losses
		if len(shown) > 10 {
			shown = append(shown[:10:10], fmt.Sprintf("and %d more", len(losses)-10))
		}
		return fmt.Errorf("broker: %w: %s; %s", records.ErrDataLoss, strings.Join(shown, "; "), acceptHint)
	}
	for _, tp := range missing {
		if err := log.CreatePartitions(tp.Topic, tp.Partition+1); err != nil {
			return err
		}
	}
	return nil
}
