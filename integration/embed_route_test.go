package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// routeProgram is the fresh module's program: a broker embedded as the
// README says, read back through the public API.
const routeProgram = `package main

import (
	"context"
	"fmt"
	"os"

	"github.com/minibroker/minibroker/broker"
)

func main() {
	b, err := broker.Start(context.Background(), broker.Config{Topics: map[string]int32{"orders": 4}})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer b.Close()
	parts, err := b.Partitions("orders")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println("orders", len(parts))
}
`

// TestReadmeEmbeddingRoute: the README's route to embedding minibroker
// works from a fresh module outside the repository: the README's require
// and replace lines, the clone beside the module (here a link to this
// repository), go mod tidy, then a build and a run of a program that
// starts a broker. It runs offline: no module proxy, and the go.sum of
// the clone stands in for the checksums go mod tidy would fetch.
func TestReadmeEmbeddingRoute(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a module")
	}
	t.Parallel()
	readme, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	require.NoError(t, err)
	_, section, ok := strings.Cut(string(readme), "## Inside your own go test")
	require.True(t, ok)
	section, _, _ = strings.Cut(section, "\n## ")
	_, route, ok := strings.Cut(section, "finds nothing.")
	require.True(t, ok, "the README says go get finds nothing")
	_, lines, ok := strings.Cut(route, "```text\n")
	require.True(t, ok)
	lines, _, ok = strings.Cut(lines, "```\n")
	require.True(t, ok)
	require.Contains(t, lines, "replace github.com/minibroker/minibroker => ../minibroker\n")

	root, err := filepath.Abs(repoRoot)
	require.NoError(t, err)
	dir := t.TempDir()
	require.NoError(t, os.Symlink(root, filepath.Join(dir, "minibroker")))
	app := filepath.Join(dir, "app")
	require.NoError(t, os.Mkdir(app, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(app, "go.mod"), []byte("module example.com/app\n\ngo 1.26\n\n"+lines), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(app, "main.go"), []byte(routeProgram), 0o644))
	sums, err := os.ReadFile(filepath.Join(root, "go.sum"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(app, "go.sum"), sums, 0o644))

	run := func(name string, args ...string) string {
		t.Helper()
		cmd := exec.Command(name, args...)
		cmd.Dir = app
		cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOPROXY=off", "GOWORK=off", "GOTOOLCHAIN=local")
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s %s:\n%s", name, strings.Join(args, " "), out)
		return string(out)
	}
	run("go", "mod", "tidy")
	mod, err := os.ReadFile(filepath.Join(app, "go.mod"))
	require.NoError(t, err)
	require.Contains(t, string(mod), "require github.com/minibroker/minibroker v0.0.0\n")
	require.Contains(t, string(mod), "github.com/twmb/franz-go v1.22.3 // indirect", "tidy filled in what minibroker needs")
	run("go", "build", "-o", "app", ".")
	require.Equal(t, "orders 4\n", run(filepath.Join(app, "app")))
}
