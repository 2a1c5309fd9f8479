package catalog

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCatalogRoundTrip(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	f, topics, err := Open(dir)
	require.NoError(t, err)
	require.Empty(t, topics)

	require.NoError(t, f.SaveTopics(map[string]int32{"payments": 1, "orders": 4}))
	data, err := os.ReadFile(filepath.Join(dir, FileName))
	require.NoError(t, err)
	require.Equal(t, "{\n  \"version\": 1,\n  \"topics\": {\n    \"orders\": 4,\n    \"payments\": 1\n  }\n}\n", string(data))

	_, topics, err = Open(dir)
	require.NoError(t, err)
	require.Equal(t, map[string]int32{"orders": 4, "payments": 1}, topics)
}

func TestCatalogCorruptFileNamesPath(t *testing.T) {
	t.Parallel()
	for name, content := range map[string]string{
		"not json":       "{",
		"no version":     `{"topics":{"a":1}}`,
		"zero partition": `{"version":1,"topics":{"a":0}}`,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			path := filepath.Join(dir, FileName)
			require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
			_, _, err := Open(dir)
			require.ErrorContains(t, err, path)
		})
	}
}

func TestCatalogUnreadable(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	require.NoError(t, os.Mkdir(filepath.Join(dir, FileName), 0o755))
	_, _, err := Open(dir)
	require.ErrorContains(t, err, "read topic catalog")
}
