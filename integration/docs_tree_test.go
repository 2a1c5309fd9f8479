package integration

// What the documents say of the repository itself, checked against it:
// the README's layout against the tree, the labs' order everywhere they
// are listed, the Go version the README names against go.mod's.

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// readmeSectionText returns the text of the README section under heading
// (a "## " line), up to the next "## " heading.
func readmeSectionText(t *testing.T, heading string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	require.NoError(t, err)
	_, section, ok := strings.Cut(string(data), "\n## "+heading+"\n")
	require.True(t, ok, "README.md has a section %q", heading)
	section, _, _ = strings.Cut(section, "\n## ")
	return section
}

// TestReadmeLayoutIsTheTree: the README's Layout table has a row for
// every top-level directory that holds Go code, and for scripts/, and
// every row names a directory that exists.
func TestReadmeLayoutIsTheTree(t *testing.T) {
	t.Parallel()
	var rows []string
	row := regexp.MustCompile("(?m)^\\| `([^`]+)/` \\|")
	for _, m := range row.FindAllStringSubmatch(readmeSectionText(t, "Layout"), -1) {
		rows = append(rows, m[1])
	}
	require.NotEmpty(t, rows)
	for _, r := range rows {
		require.DirExists(t, filepath.Join(repoRoot, r), "README.md's Layout names %s/", r)
	}

	entries, err := os.ReadDir(repoRoot)
	require.NoError(t, err)
	want := []string{"scripts"}
	for _, e := range entries {
		if !e.IsDir() || strings.HasPrefix(e.Name(), ".") || e.Name() == "scripts" {
			continue
		}
		if holdsGo(t, filepath.Join(repoRoot, e.Name())) {
			want = append(want, e.Name())
		}
	}
	slices.Sort(want)
	got := slices.Sorted(slices.Values(rows))
	require.Equal(t, want, got, "README.md's Layout: one row per top-level directory with Go code, and scripts/")
}

// holdsGo reports whether a .go file lies anywhere under dir.
func holdsGo(t *testing.T, dir string) bool {
	t.Helper()
	found := false
	require.NoError(t, filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(path, ".go") {
			found = true
			return fs.SkipAll
		}
		return nil
	}))
	return found
}
