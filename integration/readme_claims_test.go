package integration

// What the README quotes or promises beside its commands: the files its
// code blocks show, the module path it tells another module to require,
// and what a bad flag value does.

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/minibroker/minibroker/internal/testutil"
)

// TestReadmeEmbeddingExampleIsTheTestedFile: the README's go test example
// is examples/embedded/readme_test.go to the byte, which make test runs
// in a module of its own.
func TestReadmeEmbeddingExampleIsTheTestedFile(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	require.NoError(t, err)
	file, err := os.ReadFile(filepath.Join(repoRoot, "examples/embedded/readme_test.go"))
	require.NoError(t, err)
	_, section, ok := strings.Cut(string(readme), "## Inside your own go test")
	require.True(t, ok)
	_, block, ok := strings.Cut(section, "```go\n")
	require.True(t, ok)
	block, _, ok = strings.Cut(block, "```\n")
	require.True(t, ok)
	require.Equal(t, string(file), block)
}

// TestReadmeDependOnMinibroker: the module path the README tells another
// module to require is this module's, and examples/embedded (a module of
// its own, which make test runs) depends on it with the README's require
// and a replace directive, as the README says (TestReadmeEmbeddingRoute
// runs the route from a fresh module).
func TestReadmeDependOnMinibroker(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	require.NoError(t, err)
	mod, err := os.ReadFile(filepath.Join(repoRoot, "go.mod"))
	require.NoError(t, err)
	embedded, err := os.ReadFile(filepath.Join(repoRoot, "examples/embedded/go.mod"))
	require.NoError(t, err)
	path := regexp.MustCompile(`(?m)^module (\S+)$`).FindSubmatch(mod)[1]
	require.Contains(t, string(readme), "`go get "+string(path)+"@latest` finds nothing")
	require.Contains(t, string(readme), "\nrequire "+string(path)+" v0.0.0\nreplace "+string(path)+" => ../minibroker\n")
	require.Contains(t, string(embedded), "\t"+string(path)+" v0.0.0\n")
	require.Contains(t, string(embedded), "\nreplace "+string(path)+" => ../..\n")
}

// TestReadmeHelloGroupExcerpt: the code the README shows from
// examples/hello-group is the program's, line for line (one indent less).
func TestReadmeHelloGroupExcerpt(t *testing.T) {
	t.Parallel()
	var excerpt []string
	for _, b := range readmeBlocks(t) {
		if b.section == "A group forms" && b.lang == "go" {
			excerpt = b.lines
		}
	}
	require.NotEmpty(t, excerpt, "README.md shows hello-group's code under \"A group forms\"")
	program, err := os.ReadFile(filepath.Join(repoRoot, "examples/hello-group/main.go"))
	require.NoError(t, err)
	indented := make([]string, len(excerpt))
	for i, l := range excerpt {
		indented[i] = "\t" + l
	}
	require.Contains(t, string(program), strings.Join(indented, "\n")+"\n")
}

// TestReadmeBadFlagValuesExitTwo: what the README says of a bad flag
// value, run with the binary: one line, status 2, no data dir created,
// for each kind it names; the duration's message is the one it quotes.
func TestReadmeBadFlagValuesExitTwo(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	t.Parallel()
	readme, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	require.NoError(t, err)
	flat := strings.Join(strings.Fields(string(readme)), " ")
	require.Contains(t, flat, "A bad flag value prints one line saying what is wrong and exits with status 2, before anything is created on disk")
	quoted := regexp.MustCompile("`--expiry-interval 10` says \"([^\"]+)\"").FindStringSubmatch(flat)
	require.NotNil(t, quoted, "the README quotes the duration's message")
	bin := testutil.BuildMain(t, "github.com/minibroker/minibroker/cmd/minibroker")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--listen", "127.0.0.1:99999"}, "the port must be a number from 0 to 65535"},
		{[]string{"--admin", "0.0.0.0:9644"}, "needs an AdminToken (--admin-token)"},
		{[]string{"--expiry-interval", "10"}, quoted[1]},
	} {
		dir := filepath.Join(t.TempDir(), "data")
		var stdout, stderr bytes.Buffer
		cmd := exec.Command(bin, append([]string{"serve", "--data-dir", dir}, tc.args...)...)
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		require.Equal(t, 2, exitCode(err), "%v: %s", tc.args, stderr.String())
		require.Equal(t, 1, strings.Count(stderr.String(), "\n"), "one line: %s", stderr.String())
		require.Contains(t, stderr.String(), tc.want)
		require.Empty(t, stdout.String())
		require.NoDirExists(t, dir)
	}
}
