package broker

import (
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/minibroker/minibroker/internal/testutil"
)

// TestOpenCatalogKeepsExistingTopics: configured topics are created once;
// at a later start a topic that exists keeps its partition count, and the
// difference is logged at Warn.
func TestOpenCatalogKeepsExistingTopics(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	logs := testutil.NewLogRecorder(t.Output(), slog.LevelError)
	cat, err := openCatalog(Config{DataDir: dir, Topics: map[string]int32{"orders": 4}}, logs.Logger())
	require.NoError(t, err)
	require.Equal(t, map[string]int32{"orders": 4}, cat.Counts())
	require.Empty(t, logs.AtLevel(slog.LevelWarn))

	cat, err = openCatalog(Config{DataDir: dir, Topics: map[string]int32{"orders": 8, "payments": 1}}, logs.Logger())
	require.NoError(t, err)
	require.Equal(t, map[string]int32{"orders": 4, "payments": 1}, cat.Counts())
	require.Equal(t, []testutil.Record{{
		Level: slog.LevelWarn, Message: "topic exists with another partition count; keeping it",
		Attrs: map[string]string{"topic": "orders", "partitions": "4", "asked": "8"},
	}}, logs.AtLevel(slog.LevelWarn))
}
