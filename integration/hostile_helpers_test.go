package integration

// Helpers for the hostile_*, crash_* and tls_* tests: "minibroker serve"
// run as a process (built once per test binary), which a test can kill.
// In-process brokers with adjusted limits or a faulty file system come
// from startBroker, whose adjust functions set broker.Config's fields.

import (
	"bufio"
	"fmt"
	"io"
	"os/exec"
	"regexp"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/internal/testutil"
)

// directCommit is an OffsetCommit v9 with generation -1 and no member id
// (a consumer with a manual assignment) of one partition.
func directCommit(group, topic string, partition int32, offset int64) *kmsg.OffsetCommitRequest {
	return commitRequest(9, group, "", -1, tp{topic, partition, offset})
}

// brokerProcess is "minibroker serve" running as a process of its own.
type brokerProcess struct {
	Addr string
	cmd  *exec.Cmd
	logs *testutil.Buffer
	done chan struct{} // closed when the process has exited
	err  error         // the exit; set before done is closed
}

var (
	readyAddr = regexp.MustCompile(`msg="minibroker ready" addr=(\S+)`)
	adminAddr = regexp.MustCompile(`msg="admin ready" addr=(\S+)`)
)

// adminAddr returns the address of the process's admin API, from its
// "admin ready" line (logged before "minibroker ready").
func (p *brokerProcess) adminAddr(t *testing.T) string {
	t.Helper()
	m := adminAddr.FindStringSubmatch(p.logs.String())
	require.NotNil(t, m, "no admin ready line:\n%s", p.logs.String())
	return m[1]
}

// startProcess runs "minibroker serve --listen 127.0.0.1:0" with args and
// waits for its ready line. Cleanup kills it if it still runs. Skipped
// under -short.
func startProcess(t *testing.T, args ...string) *brokerProcess {
	t.Helper()
	return startProcessNoFile(t, 0, args...)
}

// startProcessNoFile is startProcess with RLIMIT_NOFILE lowered to nofile
// (soft and hard, so that the Go runtime cannot raise it) for the
// process; 0 leaves it as it is.
func startProcessNoFile(t *testing.T, nofile int, args ...string) *brokerProcess {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := testutil.BuildMain(t, minibrokerPkg)
	p := &brokerProcess{logs: &testutil.Buffer{}, done: make(chan struct{})}
	serve := append([]string{"serve", "--listen", "127.0.0.1:0"}, args...)
	if nofile > 0 {
		script := fmt.Sprintf(`ulimit -n %d && exec "$0" "$@"`, nofile)
		p.cmd = exec.Command("/bin/sh", append([]string{"-c", script, bin}, serve...)...)
	} else {
		p.cmd = exec.Command(bin, serve...)
	}
	stderr, err := p.cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, p.cmd.Start())
	ready := make(chan string, 1)
	go func() { // owns stderr until EOF
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			p.logs.Write([]byte(line + "\n"))
			if m := readyAddr.FindStringSubmatch(line); m != nil {
				ready <- m[1]
			}
		}
		_, _ = io.Copy(io.Discard, stderr)
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		<-p.done
	})
	select {
	case p.Addr = <-ready:
	case <-p.done:
		t.Fatalf("minibroker exited before it was ready (%v):\n%s", p.err, p.logs.String())
	case <-time.After(30 * time.Second):
		t.Fatalf("minibroker was not ready within 30 s:\n%s", p.logs.String())
	}
	return p
}

// signal sends sig and waits up to limit for the process to exit; it
// returns the exit code (-1 for a death by signal).
func (p *brokerProcess) signal(t *testing.T, sig syscall.Signal, limit time.Duration) int {
	t.Helper()
	require.NoError(t, p.cmd.Process.Signal(sig))
	select {
	case <-p.done:
	case <-time.After(limit):
		t.Fatalf("minibroker did not exit within %v of %v:\n%s", limit, sig, p.logs.String())
	}
	if p.err == nil {
		return 0
	}
	var exit *exec.ExitError
	require.ErrorAs(t, p.err, &exit)
	return exit.ExitCode()
}
