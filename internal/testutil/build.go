package testutil

import (
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sync"
	"testing"
)

// builds holds the main packages built by BuildMain in this test binary:
// one temporary directory, and one build per package.
var builds struct {
	mu   sync.Mutex
	dir  string                 // "" until the first build
	bins map[string]*buildEntry // import path -> its build
}

type buildEntry struct {
	once sync.Once
	bin  string
	err  error
}

// BuildMain builds the main package pkg (an import path, such as
// "github.com/minibroker/minibroker/cmd/minibroker") once per test binary
// and returns the executable's path; a failed build fails t. The
// executables live in one temporary directory that RemoveBuilds deletes:
// a package that uses BuildMain calls it from TestMain after m.Run.
func BuildMain(t testing.TB, pkg string) string {
	t.Helper()
	builds.mu.Lock()
	if builds.bins == nil {
		builds.bins = make(map[string]*buildEntry)
	}
	e, ok := builds.bins[pkg]
	if !ok {
		e = new(buildEntry)
		builds.bins[pkg] = e
	}
	builds.mu.Unlock()

	e.once.Do(func() { e.bin, e.err = build(pkg) })
	if e.err != nil {
		t.Fatal(e.err)
	}
	return e.bin
}

// build runs go build for pkg into the shared directory.
func build(pkg string) (string, error) {
	builds.mu.Lock()
	if builds.dir == "" {
		dir, err := os.MkdirTemp("", "minibroker-test-bin-")
		if err != nil {
			builds.mu.Unlock()
			return "", err
		}
		builds.dir = dir
	}
	dir := builds.dir
	builds.mu.Unlock()

	bin := filepath.Join(dir, path.Base(pkg))
	if out, err := exec.Command("go", "build", "-o", bin, pkg).CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build %s: %v\n%s", pkg, err, out)
	}
	return bin, nil
}

// RemoveBuilds deletes what BuildMain built. TestMain calls it after
// m.Run.
func RemoveBuilds() {
	builds.mu.Lock()
	defer builds.mu.Unlock()
	if builds.dir != "" {
		os.RemoveAll(builds.dir)
	}
}
