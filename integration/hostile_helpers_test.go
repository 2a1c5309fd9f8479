package integration

// Helpers for the hostile_*, crash_* and tls_* tests: an in-process broker
// whose limits and offset file system a test sets, and "minibroker serve"
// run as a process (built once per test binary), which a test can kill.

import (
	"bufio"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/clock"
	"github.com/minibroker/minibroker/coordinator"
	"github.com/minibroker/minibroker/internal/catalog"
	"github.com/minibroker/minibroker/offsets"
	"github.com/minibroker/minibroker/protocol"
	"github.com/minibroker/minibroker/server"
)

// limitedOptions configures startLimitedBroker. Zero fields mean: the
// default topics, a fresh data dir, the store's defaults (the real file
// system), every limit at its default, and a logger that records every record and passes Warn
// and above to the test's output.
type limitedOptions struct {
	Topics map[string]int32
	Dir    string
	Store  func(*offsets.Config) // after Dir is set
	Server func(*server.Config)
	Coord  func(*coordinator.Config)
	// Quiet logs Error and above to the test's output only, recording
	// nothing: for tests that measure the heap and flood the broker with
	// peers it warns about.
	Quiet bool
}

// limitedBroker is one in-process broker on 127.0.0.1:0 with a file
// offset store, on a manual clock (nothing expires unless a test asks).
type limitedBroker struct {
	Addr  string
	Dir   string
	Coord *coordinator.Coordinator
	Logs  *logRecorder

	store    *offsets.Store
	cancel   context.CancelFunc
	served   chan error
	stopOnce sync.Once
	stopErr  error
}

func startLimitedBroker(t *testing.T, opts limitedOptions) *limitedBroker {
	t.Helper()
	b := &limitedBroker{Dir: opts.Dir, Logs: &logRecorder{}}
	if b.Dir == "" {
		b.Dir = t.TempDir()
	}
	topics := opts.Topics
	if topics == nil {
		topics = defaultTopics()
	}
	cat, stored, err := catalog.Open(b.Dir)
	require.NoError(t, err)
	for name, n := range topics {
		stored[name] = n
	}
	require.NoError(t, cat.SaveTopics(stored))
	storeCfg := offsets.Config{Dir: b.Dir}
	if opts.Store != nil {
		opts.Store(&storeCfg)
	}
	b.store, err = offsets.Open(storeCfg)
	require.NoError(t, err)

	out := slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn})
	logger := slog.New(&logHandler{rec: b.Logs, out: out})
	if opts.Quiet {
		logger = slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelError}))
	}
	coordCfg := coordinator.Config{Clock: clock.NewManual(time.UnixMilli(0)), Store: b.store, Topics: stored, Logger: logger}
	if opts.Coord != nil {
		opts.Coord(&coordCfg)
	}
	b.Coord, err = coordinator.New(coordCfg)
	require.NoError(t, err)
	srvCfg := server.Config{Coordinator: b.Coord, Logger: logger, Topics: cat}
	if opts.Server != nil {
		opts.Server(&srvCfg)
	}
	srv, err := server.New(srvCfg)
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	b.Addr = ln.Addr().String()
	ctx, cancel := context.WithCancel(context.Background())
	b.cancel, b.served = cancel, make(chan error, 1)
	go func() { b.served <- srv.Serve(ctx, ln) }()
	t.Cleanup(func() {
		if err := b.stop(); err != nil {
			t.Errorf("stopping broker: %v", err)
		}
	})
	return b
}

// stop cancels Serve, waits for it, then closes the store. Idempotent.
func (b *limitedBroker) stop() error {
	b.stopOnce.Do(func() {
		b.cancel()
		select {
		case b.stopErr = <-b.served:
		case <-time.After(waitTimeout):
			b.stopErr = errors.New("Serve did not return after cancel")
		}
		if err := b.store.Close(); err != nil && b.stopErr == nil {
			b.stopErr = err
		}
	})
	return b.stopErr
}

// dial opens a raw client; cleanup closes it.
func (b *limitedBroker) dial(t *testing.T, clientID string) *protocol.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
	defer cancel()
	c, err := protocol.Dial(ctx, b.Addr, clientID)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

// directCommit is an OffsetCommit v9 with generation -1 and no member id
// (a consumer with a manual assignment) of one partition.
func directCommit(group, topic string, partition int32, offset int64) *kmsg.OffsetCommitRequest {
	return commitRequest(9, group, "", -1, tp{topic, partition, offset})
}

// buildMinibroker builds cmd/minibroker once per test binary.
var buildMinibroker = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "minibroker-integration-")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "minibroker")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/minibroker/minibroker/cmd/minibroker").CombinedOutput()
	if err != nil {
		return "", errors.New("go build: " + err.Error() + ": " + string(out))
	}
	return bin, nil
})

// brokerProcess is "minibroker serve" running as a process of its own.
type brokerProcess struct {
	Addr string
	cmd  *exec.Cmd
	logs *syncBuffer
	done chan struct{} // closed when the process has exited
	err  error         // the exit; set before done is closed
}

// syncBuffer is a bytes buffer safe for one writer and many readers.
type syncBuffer struct {
	mu sync.Mutex
	sb strings.Builder // guarded by mu
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.sb.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.sb.String()
}

var readyAddr = regexp.MustCompile(`msg="minibroker ready" addr=(\S+)`)

// startProcess runs "minibroker serve --listen 127.0.0.1:0" with args and
// waits for its ready line. Cleanup kills it if it still runs. Skipped
// under -short.
func startProcess(t *testing.T, args ...string) *brokerProcess {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin, err := buildMinibroker()
	require.NoError(t, err)
	p := &brokerProcess{logs: &syncBuffer{}, done: make(chan struct{})}
	p.cmd = exec.Command(bin, append([]string{"serve", "--listen", "127.0.0.1:0"}, args...)...)
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

// dial opens a raw client to the process; cleanup closes it.
func (p *brokerProcess) dial(t *testing.T) *protocol.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
	defer cancel()
	c, err := protocol.Dial(ctx, p.Addr, "process-test")
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c
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
