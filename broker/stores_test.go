package broker

import (
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/minibroker/minibroker/internal/testutil"
	"github.com/minibroker/minibroker/records"
)

// TestOpenCatalogKeepsExistingTopics: configured topics are created once;
// at a later start a topic that exists keeps its partition count, and the
// difference is logged at Warn.
func TestOpenCatalogKeepsExistingTopics(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	logs := testutil.NewLogRecorder(t.Output(), slog.LevelError)
	log, err := openLog(Config{}, logs.Logger())
	require.NoError(t, err)
	t.Cleanup(func() { log.Close() })
	cat, err := openCatalog(Config{DataDir: dir, Topics: map[string]int32{"orders": 4}}, logs.Logger(), log)
	require.NoError(t, err)
	require.Equal(t, map[string]int32{"orders": 4}, cat.Counts())
	require.Empty(t, logs.AtLevel(slog.LevelWarn))

	cat, err = openCatalog(Config{DataDir: dir, Topics: map[string]int32{"orders": 8, "payments": 1}}, logs.Logger(), log)
	require.NoError(t, err)
	require.Equal(t, map[string]int32{"orders": 4, "payments": 1}, cat.Counts())
	require.Equal(t, []testutil.Record{{
		Level: slog.LevelWarn, Message: "topic exists with another partition count; keeping it",
		Attrs: map[string]string{"topic": "orders", "partitions": "4", "asked": "8"},
	}}, logs.AtLevel(slog.LevelWarn))
}

// TestOpenCatalogGivesEveryTopicItsLogs: topics in the catalog, configured
// ones and ones created later all have their partitions' logs.
func TestOpenCatalogGivesEveryTopicItsLogs(t *testing.T) {
	t.Parallel()
	log, err := openLog(Config{}, nil)
	require.NoError(t, err)
	t.Cleanup(func() { log.Close() })
	cat, err := openCatalog(Config{Topics: map[string]int32{"orders": 2}}, slog.New(slog.DiscardHandler), log)
	require.NoError(t, err)
	_, err = cat.Create("audit", 1)
	require.NoError(t, err)
	require.Equal(t, []records.TopicPartition{{Topic: "audit", Partition: 0}, {Topic: "orders", Partition: 0}, {Topic: "orders", Partition: 1}}, log.Partitions())
}
