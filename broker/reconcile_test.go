package broker

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/minibroker/minibroker/catalog"
	"github.com/minibroker/minibroker/internal/testutil"
	"github.com/minibroker/minibroker/records"
)

// openStores opens the logs and the catalog of cfg.DataDir as Start
// does, and closes the log when the test ends.
func openStores(t *testing.T, cfg Config) (*records.Log, *catalog.Catalog, *testutil.LogRecorder, error) {
	t.Helper()
	logs := testutil.NewLogRecorder(t.Output(), slog.LevelWarn)
	log, err := openLog(cfg, logs.Logger())
	if err != nil {
		return nil, nil, logs, err
	}
	t.Cleanup(func() { log.Close() })
	cat, err := openCatalog(cfg, logs.Logger(), log)
	if err != nil {
		require.NoError(t, log.Close())
	}
	return log, cat, logs, err
}

// seed makes a data dir with topic a (2 partitions, 3 records in a-1) and
// topic b (1 partition, empty), closed cleanly.
func seed(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	log, cat, _, err := openStores(t, Config{DataDir: dir, Topics: map[string]int32{"a": 2, "b": 1}})
	require.NoError(t, err)
	require.NoError(t, cat.Close())
	raw := records.EncodeBatch(records.BatchSpec{FirstTimestamp: time.Now().UnixMilli(),
		Records: []records.Record{{Value: []byte("x")}, {Value: []byte("y")}, {Value: []byte("z")}}})
	batch, err := log.Validate(raw)
	require.NoError(t, err)
	pd, err := log.Append("a", 1, batch)
	require.NoError(t, err)
	_, err = pd.Wait()
	require.NoError(t, err)
	require.NoError(t, log.Close())
	return dir
}

// TestReconcileCatalogWithoutLogs: a partition directory the catalog
// names is gone. Start-up refuses, naming the catalog and the directory
// and how to proceed (an empty one counts too: the checkpoint is what
// says whether records were lost, and it says so for a-1); with
// AcceptDataLoss the partitions start empty, each logged at Error.
func TestReconcileCatalogWithoutLogs(t *testing.T) {
	t.Parallel()
	dir := seed(t)
	logsDir := filepath.Join(dir, LogsDir)
	require.NoError(t, os.RemoveAll(filepath.Join(logsDir, "b-0")))
	_, _, _, err := openStores(t, Config{DataDir: dir})
	require.ErrorIs(t, err, records.ErrDataLoss)
	require.ErrorContains(t, err, fmt.Sprintf(`the catalog %s has partition 0 of topic "b", but its directory %s is missing`,
		filepath.Join(dir, catalog.FileName), filepath.Join(logsDir, "b-0")))
	require.ErrorContains(t, err, "--accept-data-loss")

	require.NoError(t, os.RemoveAll(filepath.Join(logsDir, "a-1")))
	_, _, _, err = openStores(t, Config{DataDir: dir})
	require.ErrorIs(t, err, records.ErrDataLoss)
	require.ErrorContains(t, err, fmt.Sprintf("partition a-1: directory %s is gone with offsets 0 to 3", filepath.Join(logsDir, "a-1")))

	log, _, logs, err := openStores(t, Config{DataDir: dir, RecordSettings: RecordSettings{AcceptDataLoss: true}})
	require.NoError(t, err)
	require.Len(t, logs.Find("partition directory missing; creating it empty as told"), 2)
	require.Len(t, logs.Find("acknowledged records missing; starting anyway as told"), 1)
	require.Len(t, log.Partitions(), 3)
}

// TestReconcileLogsWithoutCatalog: topics.json deleted. The partitions
// that hold records refuse the start, each named with its offsets; the
// empty ones are debris and removed with a Warn. With AcceptDataLoss the
// records are set aside, files kept, and the catalog starts empty.
func TestReconcileLogsWithoutCatalog(t *testing.T) {
	t.Parallel()
	dir := seed(t)
	logsDir := filepath.Join(dir, LogsDir)
	require.NoError(t, os.Remove(filepath.Join(dir, catalog.FileName)))
	_, _, logs, err := openStores(t, Config{DataDir: dir})
	require.ErrorIs(t, err, records.ErrDataLoss)
	require.ErrorContains(t, err, fmt.Sprintf(`%s holds offsets 0 to 3, but the catalog %s has no topic "a"`,
		filepath.Join(logsDir, "a-1"), filepath.Join(dir, catalog.FileName)))
	require.ErrorContains(t, err, "--accept-data-loss")
	require.Len(t, logs.Find("removed a partition directory no topic owns, left empty by a create that failed"), 2)
	require.NoDirExists(t, filepath.Join(logsDir, "a-0"))
	require.NoDirExists(t, filepath.Join(logsDir, "b-0"))
	require.DirExists(t, filepath.Join(logsDir, "a-1"))

	log, cat, logs, err := openStores(t, Config{DataDir: dir, RecordSettings: RecordSettings{AcceptDataLoss: true}})
	require.NoError(t, err)
	require.Empty(t, cat.List())
	require.Empty(t, log.Partitions())
	set := logs.Find("records no topic owns set aside as told")
	require.Len(t, set, 1)
	require.Equal(t, filepath.Join(logsDir, "a-1.1-orphaned"), set[0].Attrs["to"])
	require.FileExists(t, filepath.Join(logsDir, "a-1.1-orphaned", "00000000000000000000.log"))
}

// TestReconcileFreshLogs: a data dir with a catalog and no logs directory
// (from before partition logs existed) starts with empty logs, said at
// Warn.
func TestReconcileFreshLogs(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, catalog.FileName), []byte(`{"version":1,"topics":{"orders":2}}`), 0o644))
	log, _, logs, err := openStores(t, Config{DataDir: dir})
	require.NoError(t, err)
	require.Len(t, logs.Find("no partition logs yet; creating them empty for the catalog's topics"), 1)
	require.Len(t, log.Partitions(), 2)
}
