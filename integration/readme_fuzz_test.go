package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestReadmeFuzzDuration: the README's make-targets table says how long
// make fuzz runs, every target in turn for FUZZTIME each: its count of
// targets is the one scripts/fuzz.sh finds (fuzz.sh --list), its default
// FUZZTIME the Makefile's, and its minutes their product.
func TestReadmeFuzzDuration(t *testing.T) {
	t.Parallel()
	cmd := exec.Command("bash", filepath.Join("scripts", "fuzz.sh"), "--list")
	cmd.Dir = repoRoot
	out, err := cmd.Output()
	require.NoError(t, err)
	targets := strings.Split(strings.TrimSpace(string(out)), "\n")
	require.Greater(t, len(targets), 1)
	for _, line := range targets {
		require.Regexp(t, `^\./[a-z/]+ Fuzz[A-Za-z0-9_]+$`, line)
	}

	makefile, err := os.ReadFile(filepath.Join(repoRoot, "Makefile"))
	require.NoError(t, err)
	m := regexp.MustCompile(`(?m)^FUZZTIME\s*\?=\s*(\d+)s$`).FindSubmatch(makefile)
	require.NotNil(t, m, "the Makefile's FUZZTIME default, in seconds")
	seconds, err := strconv.Atoi(string(m[1]))
	require.NoError(t, err)

	readme, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	require.NoError(t, err)
	row := regexp.MustCompile("(?m)^\\| `make fuzz FUZZTIME=(\\d+)s` \\|.* (\\d+) targets, so (\\d+) minutes at the default (\\d+)s").FindSubmatch(readme)
	require.NotNil(t, row, "the make fuzz row says how many targets and how long")
	require.Equal(t, strconv.Itoa(len(targets)), string(row[2]), "targets: fuzz.sh finds %v", targets)
	require.Equal(t, strconv.Itoa(seconds), string(row[4]), "the default FUZZTIME")
	require.Equal(t, strconv.Itoa(seconds), string(row[1]), "the example FUZZTIME is the default")
	require.Equal(t, strconv.Itoa(len(targets)*seconds/60), string(row[3]), "minutes")
}
