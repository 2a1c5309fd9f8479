package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/minibroker/minibroker/internal/testutil"
	"github.com/stretchr/testify/require"
)

// TestMain lets the test binary stand in for minibench when "minibench
// run" starts its serve-floor and serve-kfake children: they run
// os.Executable() with those arguments.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && strings.HasPrefix(os.Args[1], "serve-") {
		ctx, stop := signalContext()
		defer stop()
		os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
	}
	code := m.Run()
	testutil.RemoveBuilds()
	os.Exit(code)
}

// TestRunQuick runs a short "minibench run" of a few scenarios against
// every server, minibroker built from source: it must exit 0 (no failure,
// no unexpected error code) and print the table and the targets. Churn and
// the other scenario kinds run in tools/loadgen's tests.
func TestRunQuick(t *testing.T) {
	if testing.Short() {
		t.Skip("builds minibroker and starts servers")
	}
	dir := t.TempDir()
	bin := testutil.BuildMain(t, "github.com/minibroker/minibroker/cmd/minibroker")

	var stdout, stderr bytes.Buffer
	report := filepath.Join(dir, "report.md")
	code := run(context.Background(), []string{"run", "-minibroker", bin, "-work-dir", filepath.Join(dir, "work"), "-out", report,
		"-duration", "150ms", "-warmup", "50ms", "-rounds", "2", "-scale", "0.001", "-in-process=false",
		"-only", "^(hb-c4|hb-pipe8-c4|commit-c4|stored-.*|members-100k|produce-sync|consume-100B|e2e-1000)$",
		"-profile", filepath.Join(dir, "prof"), "-trace", filepath.Join(dir, "traces")}, &stdout, &stderr)
	require.Equal(t, 0, code, "stderr:\n%s\nstdout:\n%s", stderr.String(), stdout.String())
	table := stdout.String()
	for _, want := range []string{"| **hb-c4** | minibroker |", "| kfake |", "| kfake-fsync |", "| floor |", "**stored-1k**", "**members-100k**",
		"| **produce-sync** | minibroker |", "**consume-100B**", "**e2e-1000**", "one 100-byte record", "Targets:",
		"### Server CPU per request and per MB", "| scenario | server | ops/s | req/s | CPU/req | CPU/MB |"} {
		require.Contains(t, table, want)
	}
	require.NotContains(t, table, "ERROR")
	if runtime.GOOS == "linux" { // the machine's shares come from /proc/stat, read at the start and the end
		require.Regexp(t, `over the run, the machine's CPUs \d+% busy, \d+% idle, \d+% stolen by the hypervisor \(/proc/stat\)\. Each server`, table)
	}
	saved, err := os.ReadFile(report)
	require.NoError(t, err)
	require.Equal(t, table, string(saved), "the report file holds the printed table")
	for _, name := range []string{"cpu", "allocs", "mutex", "heap"} {
		require.FileExists(t, filepath.Join(dir, "prof", "produce-sync", name+".pprof"), "minibroker's profiles of each scenario")
	}
	traces, err := os.ReadDir(filepath.Join(dir, "traces"))
	require.NoError(t, err)
	var names []string
	for _, e := range traces {
		names = append(names, e.Name())
	}
	require.Equal(t, []string{"commit-c4.trace", "consume-100B.trace", "e2e-1000.trace", "hb-c4.trace", "hb-pipe8-c4.trace",
		"members-100k.trace", "produce-sync.trace", "stored-10k.trace", "stored-1k.trace"}, names,
		"one execution trace per scenario, of minibroker alone")
	head := make([]byte, 16)
	f, err := os.Open(filepath.Join(dir, "traces", "commit-c4.trace"))
	require.NoError(t, err)
	_, err = io.ReadFull(f, head)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	require.Regexp(t, `^go 1\.\d+ trace\x00+$`, string(head), "a trace go tool trace reads")
}

func TestRunFlags(t *testing.T) {
	var stdout, stderr bytes.Buffer
	require.Equal(t, 2, run(context.Background(), nil, &stdout, &stderr))
	require.Equal(t, 2, run(context.Background(), []string{"nope"}, &stdout, &stderr))
	require.Equal(t, 2, run(context.Background(), []string{"run", "-servers", "nope"}, &stdout, &stderr))
	require.Contains(t, stderr.String(), `unknown server "nope"`)
	require.Equal(t, 2, run(context.Background(), []string{"run", "-rounds", "0"}, &stdout, &stderr))
	require.Equal(t, 1, run(context.Background(), []string{"run", "-minibroker", filepath.Join(t.TempDir(), "missing")}, &stdout, &stderr))
	require.Contains(t, stderr.String(), "make build")
}
