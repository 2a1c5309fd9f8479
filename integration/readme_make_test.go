package integration

// The README's make targets, run as a terminal runs them: make run
// stopped with Ctrl-C, and make reset beside a running broker.

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/minibroker/minibroker/broker"
	"github.com/minibroker/minibroker/internal/testutil"
)

// TestReadmeMakeRun runs "make run" as a terminal would, on ports the
// kernel picks and its own directories, and stops it with Ctrl-C (SIGINT
// to the whole process group): the broker stops cleanly and make reports
// no error. A broker that exits non-zero on SIGINT shows as make's
// "*** [Makefile:N: run] Error 1", whatever else make does.
//
// GNU make has a race of its own here: when the broker exits on the
// SIGINT before make's handler for it runs, make's main loop may have
// reaped the broker (wait returned its pid) when the handler interrupts
// it and waits again for a child make still counts (commands.c
// fatal_error_signal, job.c reap_children): that wait fails with ECHILD,
// make says "*** wait: No child processes.  Stop." (with, at times,
// "*** Waiting for unfinished jobs...." and the same line again from its
// exit path) and exits 2, and the broker's exit status is lost with the
// interrupted frame. A loaded
// machine makes it likely (make is scheduled after the broker has
// exited). Such a run tells nothing of the broker's status, so it is run
// again; every run must still show the broker's clean stop.
func TestReadmeMakeRun(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	t.Parallel()
	dir := t.TempDir()
	const attempts = 5
	for attempt := 1; ; attempt++ {
		log, ws := readmeMakeRunOnce(t, filepath.Join(dir, "bin"), filepath.Join(dir, fmt.Sprintf("data-%d", attempt)))
		require.Contains(t, log, `msg="minibroker stopped"`, "the broker stops cleanly:\n%s", log)
		raced := ws.Exited() && ws.ExitStatus() == 2 && makeWaitRace(makeErrors(log))
		if raced && attempt < attempts {
			t.Logf("run %d: make lost the broker's exit status to its own SIGINT race; again", attempt)
			continue
		}
		require.False(t, raced, "make lost the broker's exit status to its own SIGINT race %d times in a row:\n%s", attempts, log)
		require.Empty(t, makeErrors(log), "make reports no error:\n%s", log)
		if !ws.Exited() || ws.ExitStatus() != 0 { // make itself was interrupted too, as in a terminal (the shell says 130)
			require.True(t, ws.Signaled() && ws.Signal() == syscall.SIGINT, "make: %v\n%s", ws, log)
		}
		return
	}
}

// makeWaitRace reports whether make's error lines are those of its SIGINT
// race alone: the failed wait, and, when make's exit path (main.c die)
// waits for the child it still counts, "Waiting for unfinished jobs" and
// the same failed wait again.
func makeWaitRace(errs []string) bool {
	const failed, waiting = "*** wait: No child processes.  Stop.", "*** Waiting for unfinished jobs...."
	return len(errs) > 0 && errs[0] == failed && !slices.ContainsFunc(errs, func(e string) bool { return e != failed && e != waiting })
}

// makeErrorLine matches what make prints for an error, at any MAKELEVEL
// ("make: ***" or "make[1]: ***").
var makeErrorLine = regexp.MustCompile(`(?m)\bmake(?:\[\d+\])?: (\*\*\*.*)$`)

// makeErrors returns make's error lines in log, from the "***" on.
func makeErrors(log string) []string {
	var out []string
	for _, m := range makeErrorLine.FindAllStringSubmatch(log, -1) {
		out = append(out, m[1])
	}
	return out
}

// readmeMakeRunOnce runs "make run" with BIN=bin and DATA_DIR=data until
// the broker is ready, sends SIGINT to make's process group, and returns
// everything make and the broker printed and how make ended. make runs
// with the environment of a terminal's shell: none of the MAKE variables
// a make running these tests (make test) passes down.
func readmeMakeRunOnce(t *testing.T, bin, data string) (string, syscall.WaitStatus) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "make", "--no-print-directory", "-C", repoRoot, "run",
		"BIN="+bin, "LISTEN=127.0.0.1:0", "ADMIN=127.0.0.1:0", "DATA_DIR="+data, "TOPICS=orders:4 audit:1")
	cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool {
		name, _, _ := strings.Cut(kv, "=")
		return name == "MAKELEVEL" || name == "MAKEFLAGS" || name == "MFLAGS" || name == "MAKEOVERRIDES"
	})
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	out := &testutil.Buffer{}
	cmd.Stdout, cmd.Stderr = out, out
	require.NoError(t, cmd.Start())

	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	testutil.Eventually(t, 2*time.Minute, func() string { // make builds first
		select {
		case err := <-exited:
			exited <- err
			return "" // reported below
		default:
		}
		if !strings.Contains(out.String(), `msg="minibroker ready"`) {
			return "make run is not ready:\n" + out.String()
		}
		return ""
	})
	select {
	case err := <-exited:
		t.Fatalf("make run ended before Ctrl-C: %v\n%s", err, out)
	default:
	}
	require.Contains(t, out.String(), `msg="topic created" topic=audit partitions=1`)
	require.NoError(t, syscall.Kill(-cmd.Process.Pid, syscall.SIGINT))
	<-exited
	return out.String(), cmd.ProcessState.Sys().(syscall.WaitStatus)
}

// TestReadmeMakeReset: make reset removes the data dir, but not while a
// broker holds it.
func TestReadmeMakeReset(t *testing.T) {
	if testing.Short() {
		t.Skip("runs make")
	}
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "minibroker-data")
	b, err := broker.Start(t.Context(), broker.Config{DataDir: dir, Topics: map[string]int32{"orders": 4}})
	require.NoError(t, err)
	reset := func() (string, error) {
		out, err := exec.Command("make", "--no-print-directory", "-C", repoRoot, "reset", "DATA_DIR="+dir).CombinedOutput()
		return string(out), err
	}
	out, err := reset()
	require.Error(t, err, out)
	require.Contains(t, out, "make reset: a running broker holds "+dir+"; stop it (Ctrl-C make run) first")
	require.DirExists(t, filepath.Join(dir, "logs", "orders-0"), "the refused reset removed nothing")

	require.NoError(t, b.Close())
	out, err = reset()
	require.NoError(t, err, out)
	require.NoDirExists(t, dir)
}
