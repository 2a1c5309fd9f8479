package integration

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// reliabilityPath is docs/reliability.md, seen from this package.
const reliabilityPath = "../docs/reliability.md"

// TestHostileReliabilityDocCitesExistingTests: every test or fuzz target
// that docs/reliability.md cites as evidence (`TestX`, `TestX/sub`,
// `FuzzX`) is declared in some _test.go file of the module, so the table
// cannot point at a test that was renamed or removed.
func TestHostileReliabilityDocCitesExistingTests(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile(reliabilityPath)
	require.NoError(t, err)
	cited := regexp.MustCompile("`((?:Test|Fuzz)[A-Za-z0-9_]*)(?:/[^`]*)?`").FindAllStringSubmatch(string(doc), -1)
	require.NotEmpty(t, cited)

	declared := map[string]bool{}
	decl := regexp.MustCompile(`(?m)^func ((?:Test|Fuzz)[A-Za-z0-9_]*)\(`)
	require.NoError(t, filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") && path != "..") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range decl.FindAllStringSubmatch(string(src), -1) {
			declared[m[1]] = true
		}
		return nil
	}))
	for _, m := range cited {
		assert.True(t, declared[m[1]], "docs/reliability.md cites %s, which no test file declares", m[1])
	}
}
