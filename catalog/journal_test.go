package catalog

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// entryLine is t's journal line.
func entryLine(t Topic) string {
	return fmt.Sprintf(`{"topic":%q,"partitions":%d,"id":%q}`+"\n", t.Name, t.Partitions, t.ID.String())
}

// TestJournalTornTail: a last line without its newline (a crash during
// the append; the topic was never shown) is cut off at Open; the topics
// before it load, and the journal is folded into the catalog file.
func TestJournalTornTail(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	a := Topic{Name: "a", Partitions: 2, ID: ID{1}}
	b := Topic{Name: "b", Partitions: 1, ID: ID{2}}
	torn := entryLine(Topic{Name: "c", Partitions: 1, ID: ID{3}})
	require.NoError(t, os.WriteFile(filepath.Join(dir, JournalName), []byte(entryLine(a)+entryLine(b)+torn[:20]), 0o644))
	c := open(t, dir)
	require.Equal(t, []Topic{a, b}, c.List())
	require.NoFileExists(t, filepath.Join(dir, JournalName), "folded at Open")
	require.Equal(t, []Topic{a, b}, open(t, dir).List())
}

// TestJournalRefusesDamage: a bad line followed by more, a topic the file
// has differently, or a shared id stop Open with the journal's path.
func TestJournalRefusesDamage(t *testing.T) {
	t.Parallel()
	a := Topic{Name: "a", Partitions: 2, ID: ID{1}}
	cases := map[string]string{
		"bad line":      entryLine(a) + "{\"topic\":\n" + entryLine(Topic{Name: "b", Partitions: 1, ID: ID{2}}),
		"unknown field": `{"topic":"a","partitions":1,"id":"` + ID{1}.String() + `","x":1}` + "\n",
		"zero id":       entryLine(Topic{Name: "a", Partitions: 1}),
		"redefined":     entryLine(a) + entryLine(Topic{Name: "a", Partitions: 3, ID: ID{1}}),
		"shared id":     entryLine(a) + entryLine(Topic{Name: "b", Partitions: 1, ID: ID{1}}),
		"bad name":      entryLine(Topic{Name: "a/b", Partitions: 1, ID: ID{1}}),
	}
	for name, content := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			path := filepath.Join(dir, JournalName)
			require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
			_, err := Open(Config{Dir: dir})
			require.ErrorContains(t, err, "corrupt topic journal "+path)
			data, rerr := os.ReadFile(path)
			require.NoError(t, rerr)
			require.Equal(t, content, string(data), "left as it was")
		})
	}
}

// TestJournalAfterFoldCrash: a crash between writing the catalog file and
// removing the journal leaves topics in both, the same: Open loads them
// once.
func TestJournalAfterFoldCrash(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	c := open(t, dir)
	orders, err := c.Create("orders", 4)
	require.NoError(t, err)
	journal, err := os.ReadFile(filepath.Join(dir, JournalName))
	require.NoError(t, err)
	require.NoError(t, c.Close())
	require.NoError(t, os.WriteFile(filepath.Join(dir, JournalName), journal, 0o644))
	require.Equal(t, []Topic{orders}, open(t, dir).List())
}

// TestJournalFoldsEveryFoldEntries: the journal is folded into the file
// after foldEntries creates, without a restart.
func TestJournalFoldsEveryFoldEntries(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	c := open(t, dir)
	for i := range foldEntries + 1 {
		_, err := c.Create(fmt.Sprintf("t%04d", i), 1)
		require.NoError(t, err)
	}
	data, err := os.ReadFile(filepath.Join(dir, JournalName))
	require.NoError(t, err)
	require.Equal(t, 1, strings.Count(string(data), "\n"), "folded at %d, one line since", foldEntries)
	require.Len(t, open(t, dir).List(), foldEntries+1)
}

// FuzzDecodeJournal: any journal is read or refused without a panic, and
// every topic read is valid and renders back to the bytes it came from.
func FuzzDecodeJournal(f *testing.F) {
	f.Add([]byte(entryLine(Topic{Name: "orders", Partitions: 4, ID: ID{1}})))
	f.Add([]byte(entryLine(Topic{Name: "a", Partitions: 1, ID: ID{2}}) + `{"topic":"b"`))
	f.Add([]byte("\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		topics, whole, err := decodeJournal(data)
		if err != nil {
			return
		}
		if whole < 0 || whole > len(data) || (whole < len(data) && strings.Contains(string(data[whole:]), "\n")) {
			t.Fatalf("kept %d of %d bytes", whole, len(data))
		}
		for _, e := range topics {
			tp := e.t
			if !ValidTopicName(tp.Name) || (e.op == "" && tp.Partitions < 1) || tp.ID == (ID{}) {
				t.Fatalf("accepted %+v", e)
			}
		}
	})
}

// BenchmarkCreate is one topic create on a catalog of 10,000 topics: one
// journal line and one fsync, whatever the count.
func BenchmarkCreate(b *testing.B) {
	dir := b.TempDir()
	c, err := Open(Config{Dir: dir})
	if err != nil {
		b.Fatal(err)
	}
	for i := range 10_000 {
		c.add(Topic{Name: fmt.Sprintf("old%05d", i), Partitions: 1, ID: ID{byte(i), byte(i >> 8), 1}})
	}
	i := 0
	for b.Loop() {
		if _, err := c.Create(fmt.Sprintf("new%07d", i), 1); err != nil {
			b.Fatal(err)
		}
		i++
	}
}
