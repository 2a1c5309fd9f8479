package integration

// What the documents say of the repository itself, checked against it:
// the README's layout against the tree, the labs' order everywhere they
// are listed, the Go version the README names against go.mod's.

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/minibroker/minibroker/internal/testutil"
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

// TestLabsInOneOrder: the labs that make lab runs, the README lists, and
// docs/design.md section 5 names are the ones `minibroker lab` offers, in
// its order.
func TestLabsInOneOrder(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	t.Parallel()
	binary := labNames(t, testutil.BuildMain(t, "github.com/minibroker/minibroker/cmd/minibroker"))

	makefile, err := os.ReadFile(filepath.Join(repoRoot, "Makefile"))
	require.NoError(t, err)
	_, recipe, ok := strings.Cut(string(makefile), "\nlab: ")
	require.True(t, ok, "the Makefile has a lab target")
	recipe, _, _ = strings.Cut(recipe, "\n\n")
	var made []string
	for _, m := range regexp.MustCompile(`(?m)^\t\$\(BIN\)/minibroker lab (\S+)$`).FindAllStringSubmatch(recipe, -1) {
		made = append(made, m[1])
	}

	var listed []string
	for _, m := range regexp.MustCompile(`(?m)^\./bin/minibroker lab (\S+) +#`).FindAllStringSubmatch(readmeSectionText(t, "The chapter's experiments"), -1) {
		if !slices.Contains(listed, m[1]) { // the --broker example repeats one
			listed = append(listed, m[1])
		}
	}

	design, err := os.ReadFile(filepath.Join(repoRoot, "docs/design.md"))
	require.NoError(t, err)
	_, sentence, ok := strings.Cut(string(design), "The labs, in the order")
	require.True(t, ok, "docs/design.md section 5 lists the labs")
	_, sentence, _ = strings.Cut(sentence, ":")
	sentence, _, _ = strings.Cut(sentence, ".\n")
	var designed []string
	for _, m := range regexp.MustCompile("`([a-z0-9][a-z0-9-]*)`").FindAllStringSubmatch(sentence, -1) {
		designed = append(designed, m[1])
	}

	require.Len(t, binary, 10)
	require.Equal(t, binary, made, "make lab")
	require.Equal(t, binary, listed, "README.md, The chapter's experiments")
	require.Equal(t, binary, designed, "docs/design.md section 5")
}

// labNames returns the labs `minibroker lab` offers, in its order: its
// usage line's NAME|NAME|... .
func labNames(t *testing.T, bin string) []string {
	t.Helper()
	out, _ := exec.Command(bin, "lab").CombinedOutput() // no name: usage, status 2
	m := regexp.MustCompile(`(?m)^usage: minibroker lab ([a-z0-9|-]+) `).FindSubmatch(out)
	require.NotNil(t, m, "minibroker lab's usage:\n%s", out)
	return strings.Split(string(m[1]), "|")
}

// TestGoVersionAgrees: the Go the README says a user needs is the one
// go.mod asks for at least: README "Go 1.26" is go.mod's "go 1.26.0", in
// the module and in the embedding example's module. A go line with a
// later patch would make an older 1.26 toolchain refuse to build (or
// fetch another toolchain) while the README says it is enough.
func TestGoVersionAgrees(t *testing.T) {
	t.Parallel()
	m := regexp.MustCompile(`with Go (\d+\.\d+) \(any (\d+\.\d+) release: ` + "`go.mod`" + ` asks for\s+(\d+\.\d+\.\d+) at least\)`).FindStringSubmatch(readmeSectionText(t, "Set up"))
	require.NotNil(t, m, "README.md's Set up names the Go it needs")
	require.Equal(t, m[1], m[2])
	require.Equal(t, m[1]+".0", m[3], "the README's minimum is the first release of the Go it names")
	for _, mod := range []string{"go.mod", "examples/embedded/go.mod"} {
		data, err := os.ReadFile(filepath.Join(repoRoot, mod))
		require.NoError(t, err)
		goLine := regexp.MustCompile(`(?m)^go (\S+)$`).FindSubmatch(data)
		require.NotNil(t, goLine, mod)
		require.Equal(t, m[3], string(goLine[1]), "%s's go line", mod)
		require.NotRegexp(t, `(?m)^toolchain `, string(data), "%s names no toolchain beyond its go line", mod)
	}
}
