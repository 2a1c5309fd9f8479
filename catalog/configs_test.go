package catalog

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestConfigsDurable creates a topic with configs and replaces them: each
// is a journal line (read back from the file's bytes), Prepare sees the
// create's configs, apply runs with the new ones before they are shown,
// a restart on the journal alone and one on the folded file both give
// them back, and partitions added keep them.
func TestConfigsDurable(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var prepared []map[string]string
	cfg := Config{Dir: dir, Prepare: func(tp Topic) error { prepared = append(prepared, tp.Configs); return nil }}
	c, err := Open(cfg)
	require.NoError(t, err)
	created, err := c.CreateWithConfigs("orders", 2, map[string]string{"segment.bytes": "1048576"})
	require.NoError(t, err)
	require.Equal(t, map[string]string{"segment.bytes": "1048576"}, created.Configs)
	require.Equal(t, []map[string]string{{"segment.bytes": "1048576"}}, prepared)

	var applied Topic
	set, err := c.SetConfigs("orders", map[string]string{"retention.bytes": "-1", "max.message.bytes": "2048"}, func(tp Topic) {
		applied = tp
		got, _ := c.Lookup("orders")
		require.Equal(t, map[string]string{"segment.bytes": "1048576"}, got.Configs, "shown only after apply")
	})
	require.NoError(t, err)
	require.Equal(t, set, applied)
	require.Equal(t, created.ID, set.ID)
	_, err = c.AddPartitions("orders", 3)
	require.NoError(t, err)

	data, err := os.ReadFile(filepath.Join(dir, JournalName))
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	require.Len(t, lines, 3)
	id := created.ID.String()
	require.Equal(t, `{"topic":"orders","partitions":2,"id":"`+id+`","seq":1,"configs":{"segment.bytes":"1048576"}}`, lines[0])
	require.Equal(t, `{"op":"configs","topic":"orders","id":"`+id+`","seq":2,"configs":{"max.message.bytes":"2048","retention.bytes":"-1"}}`, lines[1])
	require.Equal(t, `{"op":"partitions","topic":"orders","partitions":3,"id":"`+id+`","seq":3}`, lines[2])

	want := Topic{Name: "orders", Partitions: 3, ID: created.ID, Configs: map[string]string{"retention.bytes": "-1", "max.message.bytes": "2048"}}
	// Reopened without Close: the journal is all there is (Open folds it).
	c2, err := Open(Config{Dir: dir})
	require.NoError(t, err)
	got, ok := c2.Lookup("orders")
	require.True(t, ok)
	require.Equal(t, want, got)
	require.NoFileExists(t, filepath.Join(dir, JournalName))
	file, err := os.ReadFile(filepath.Join(dir, FileName))
	require.NoError(t, err)
	require.Contains(t, string(file), `"configs": {`)

	// Back to none: the topic's entry has no configs, in memory and on disk.
	cleared, err := c2.SetConfigs("orders", map[string]string{}, nil)
	require.NoError(t, err)
	require.Nil(t, cleared.Configs)
	require.NoError(t, c2.Close())
	c3, err := Open(Config{Dir: dir})
	require.NoError(t, err)
	got, _ = c3.Lookup("orders")
	require.Nil(t, got.Configs)
	require.Equal(t, int32(3), got.Partitions)
	require.NoError(t, c3.Close())
}

// TestConfigsRefused: an unknown topic, too many configs, an empty or
// long name and a long value change nothing and write nothing.
func TestConfigsRefused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	c := open(t, dir)
	_, err := c.Create("orders", 1)
	require.NoError(t, err)
	_, err = c.SetConfigs("nope", map[string]string{"a": "1"}, nil)
	require.ErrorIs(t, err, ErrUnknownTopic)
	many := map[string]string{}
	for i := range MaxConfigs + 1 {
		many[strings.Repeat("k", i+1)] = "1"
	}
	for name, configs := range map[string]map[string]string{
		"too many":   many,
		"empty name": {"": "1"},
		"long name":  {strings.Repeat("n", MaxConfigName+1): "1"},
		"long value": {"a": strings.Repeat("v", MaxConfigValue+1)},
	} {
		_, err := c.SetConfigs("orders", configs, func(Topic) { t.Fatalf("%s: applied", name) })
		require.ErrorIs(t, err, ErrInvalidConfigs, name)
		_, err = c.CreateWithConfigs("other", 1, configs)
		require.ErrorIs(t, err, ErrInvalidConfigs, name)
	}
	got, _ := c.Lookup("orders")
	require.Nil(t, got.Configs)
	_, ok := c.Lookup("other")
	require.False(t, ok)
	data, err := os.ReadFile(filepath.Join(dir, JournalName))
	require.NoError(t, err)
	require.Equal(t, 1, strings.Count(string(data), "\n"))
}
