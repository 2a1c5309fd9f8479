package catalog

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/minibroker/minibroker/internal/atomicfile"
)

func open(t *testing.T, dir string) *Catalog {
	t.Helper()
	c, err := Open(Config{Dir: dir})
	require.NoError(t, err)
	return c
}

func TestCreateSavesThenShows(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	c := open(t, dir)
	require.Empty(t, c.List())

	orders, err := c.Create("orders", 4)
	require.NoError(t, err)
	require.NotEqual(t, ID{}, orders.ID)
	payments, err := c.Create("payments", 1)
	require.NoError(t, err)
	require.NotEqual(t, orders.ID, payments.ID)

	n, ok := c.Partitions("orders")
	require.True(t, ok)
	require.Equal(t, int32(4), n)
	byID, ok := c.ByID(payments.ID)
	require.True(t, ok)
	require.Equal(t, payments, byID)
	require.Equal(t, map[string]int32{"orders": 4, "payments": 1}, c.Counts())

	journal, err := os.ReadFile(filepath.Join(dir, JournalName))
	require.NoError(t, err)
	require.Equal(t, `{"topic":"orders","partitions":4,"id":"`+orders.ID.String()+`","seq":1}`+"\n"+
		`{"topic":"payments","partitions":1,"id":"`+payments.ID.String()+`","seq":2}`+"\n", string(journal),
		"each create appends one line")
	require.NoFileExists(t, filepath.Join(dir, FileName))
	require.NoError(t, c.Close())
	require.NoFileExists(t, filepath.Join(dir, JournalName), "Close folds the journal")
	data, err := os.ReadFile(filepath.Join(dir, FileName))
	require.NoError(t, err)
	want := "{\n  \"version\": 2,\n  \"topics\": {\n" +
		"    \"orders\": {\n      \"partitions\": 4,\n      \"id\": \"" + orders.ID.String() + "\"\n    },\n" +
		"    \"payments\": {\n      \"partitions\": 1,\n      \"id\": \"" + payments.ID.String() + "\"\n    }\n  },\n  \"seq\": 2\n}\n"
	require.Equal(t, want, string(data))

	again := open(t, dir)
	require.Equal(t, []Topic{orders, payments}, again.List(), "ids survive a restart")
}

func TestCreateRejects(t *testing.T) {
	t.Parallel()
	c, err := Open(Config{MaxPartitions: 10})
	require.NoError(t, err)
	_, err = c.Create("orders", 4)
	require.NoError(t, err)
	cases := []struct {
		name       string
		partitions int32
		want       error
	}{
		{"orders", 4, ErrTopicExists},
		{"bad name", 1, ErrInvalidTopic},
		{"..", 1, ErrInvalidTopic},
		{"empty", 0, ErrInvalidPartitions},
		{"huge", 2147483647, ErrInvalidPartitions},
		{"over", 7, ErrInvalidPartitions},
	}
	for _, tc := range cases {
		require.ErrorIs(t, c.Check(tc.name, tc.partitions), tc.want, tc.name)
		_, err := c.Create(tc.name, tc.partitions)
		require.ErrorIs(t, err, tc.want, tc.name)
	}
	require.NoError(t, c.Check("fits", 6))
	_, ok := c.Lookup("fits")
	require.False(t, ok, "Check creates nothing")
	_, err = c.Create("fits", 6)
	require.NoError(t, err)
	require.Len(t, c.List(), 2)
}

// TestCreateFailedSaveShowsNothing: a topic whose save fails is not
// visible, and the file keeps its old contents.
func TestCreateFailedSaveShowsNothing(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	c := open(t, dir)
	_, err := c.Create("orders", 4)
	require.NoError(t, err)
	before, err := os.ReadFile(filepath.Join(dir, JournalName))
	require.NoError(t, err)

	require.NoError(t, c.journal.f.Close()) // every write to it now fails
	_, err = c.Create("invoices", 2)
	require.ErrorIs(t, err, ErrStorage)
	_, ok := c.Lookup("invoices")
	require.False(t, ok)
	after, err := os.ReadFile(filepath.Join(dir, JournalName))
	require.NoError(t, err)
	require.Equal(t, before, after)

	// A failed fold shows the topic (it is in the journal, synced) and
	// keeps the journal for the next start.
	c = open(t, t.TempDir())
	c.file.fs = failingFS{}
	_, err = c.Create("orders", 4)
	require.NoError(t, err)
	require.ErrorIs(t, c.fold(), ErrStorage)
	require.FileExists(t, c.journal.path)
}

func TestCreatePrepareRunsFirst(t *testing.T) {
	t.Parallel()
	var prepared []string
	c, err := Open(Config{Prepare: func(tp Topic) error {
		prepared = append(prepared, tp.Name)
		if tp.Name == "broken" {
			return errors.New("disk full")
		}
		return nil
	}})
	require.NoError(t, err)
	_, err = c.Create("orders", 1)
	require.NoError(t, err)
	_, err = c.Create("broken", 1)
	require.ErrorIs(t, err, ErrStorage)
	require.ErrorContains(t, err, "disk full")
	require.Equal(t, []string{"orders", "broken"}, prepared)
	_, ok := c.Lookup("broken")
	require.False(t, ok)
}

// TestVersion1Upgrades: a catalog written before topic ids loads, gets
// ids, and is rewritten as version 2.
func TestVersion1Upgrades(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, FileName)
	require.NoError(t, os.WriteFile(path, []byte(`{"version":1,"topics":{"orders":4,"payments":1}}`), 0o644))
	c := open(t, dir)
	require.Equal(t, map[string]int32{"orders": 4, "payments": 1}, c.Counts())
	ids := map[ID]bool{}
	for _, tp := range c.List() {
		require.NotEqual(t, ID{}, tp.ID)
		ids[tp.ID] = true
	}
	require.Len(t, ids, 2)
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Contains(t, string(data), `"version": 2`)
	require.Equal(t, c.List(), open(t, dir).List())
}

func TestCorruptCatalogNamesPath(t *testing.T) {
	t.Parallel()
	id := ID{1}.String()
	for name, content := range map[string]string{
		"not json":        "{",
		"no version":      `{"topics":{"a":1}}`,
		"version 3":       `{"version":3,"topics":{}}`,
		"zero partitions": `{"version":1,"topics":{"a":0}}`,
		"bad name":        `{"version":1,"topics":{"a b":1}}`,
		"duplicate v1":    `{"version":1,"topics":{"a":1,"a":2}}`,
		"duplicate v2":    `{"version":2,"topics":{"a":{"partitions":1,"id":"` + id + `"},"a":{"partitions":1,"id":"` + ID{2}.String() + `"}}}`,
		"shared id":       `{"version":2,"topics":{"a":{"partitions":1,"id":"` + id + `"},"b":{"partitions":1,"id":"` + id + `"}}}`,
		"zero id":         `{"version":2,"topics":{"a":{"partitions":1,"id":"AAAAAAAAAAAAAAAAAAAAAA"}}}`,
		"short id":        `{"version":2,"topics":{"a":{"partitions":1,"id":"AAAA"}}}`,
		"unknown field":   `{"version":2,"topics":{"a":{"partitions":1,"id":"` + id + `","extra":1}}}`,
		"topics a list":   `{"version":2,"topics":[]}`,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			path := filepath.Join(dir, FileName)
			require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
			_, err := Open(Config{Dir: dir})
			require.ErrorContains(t, err, path)
			data, rerr := os.ReadFile(path)
			require.NoError(t, rerr)
			require.Equal(t, content, string(data), "a corrupt catalog is never rewritten")
		})
	}
}

// TestCatalogNotARegularFile: a symlink is not followed, and a FIFO does
// not hang Open.
func TestCatalogNotARegularFile(t *testing.T) {
	t.Parallel()
	t.Run("symlink", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		target := filepath.Join(t.TempDir(), "elsewhere.json")
		require.NoError(t, os.WriteFile(target, []byte(`{"version":1,"topics":{"a":1}}`), 0o644))
		require.NoError(t, os.Symlink(target, filepath.Join(dir, FileName)))
		_, err := Open(Config{Dir: dir})
		require.ErrorContains(t, err, "symbolic link")
	})
	t.Run("fifo", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		require.NoError(t, syscall.Mkfifo(filepath.Join(dir, FileName), 0o644))
		_, err := Open(Config{Dir: dir})
		require.ErrorContains(t, err, "not a regular file")
	})
	t.Run("directory", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		require.NoError(t, os.Mkdir(filepath.Join(dir, FileName), 0o755))
		_, err := Open(Config{Dir: dir})
		require.ErrorContains(t, err, "not a regular file")
	})
}

func TestValidTopicName(t *testing.T) {
	t.Parallel()
	for name, want := range map[string]bool{
		"orders": true, "a.b_c-D9": true, strings.Repeat("x", 249): true,
		"": false, ".": false, "..": false, strings.Repeat("x", 250): false,
		"with space": false, "slash/": false, "uml\u00e4ut": false,
	} {
		require.Equal(t, want, ValidTopicName(name), "%q", name)
	}
}

// failingFS refuses to create the temporary file a save starts with.
type failingFS struct{ atomicfile.OS }

func (failingFS) CreateTemp(string, string) (atomicfile.File, error) {
	return nil, errors.New("no space left on device")
}
