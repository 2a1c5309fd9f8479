package main

import (
	"bufio"
	"bytes"
	"context"
	"io"
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

	"github.com/minibroker/minibroker/protocol"
)

func TestServeFlagErrorsExitTwo(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"unknown flag", []string{"--nope"}, "flag provided but not defined: -nope"},
		{"topic without partitions", []string{"--topic", "orders"}, "want NAME:PARTITIONS"},
		{"zero partitions", []string{"--topic", "orders:0"}, "at least 1"},
		{"bad topic name", []string{"--topic", "a b:1"}, "invalid topic name"},
		{"bad clock", []string{"--clock", "fast"}, "--clock must be real or manual"},
		{"min above max", []string{"--min-session-timeout", "2m", "--max-session-timeout", "1m"}, "--min-session-timeout"},
		{"zero expiry", []string{"--expiry-interval", "0s"}, "--expiry-interval must be positive"},
		{"bad duration", []string{"--expiry-interval", "soon"}, "invalid value"},
		{"tiny frames", []string{"--max-frame-bytes", "10"}, "--max-frame-bytes"},
		{"bad log level", []string{"--log-level", "loud"}, "invalid value"},
		{"bad advertise", []string{"--advertise", "nohost"}, "--advertise must be HOST:PORT"},
		{"stray argument", []string{"extra"}, `unexpected argument "extra"`},
		{"empty data dir", []string{"--data-dir", ""}, "--data-dir must not be empty"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), append([]string{"serve"}, tc.args...), &stdout, &stderr)
			require.Equal(t, 2, code)
			require.Contains(t, stderr.String(), tc.want)
		})
	}
}

func TestRunUsage(t *testing.T) {
	t.Parallel()
	var stdout, stderr bytes.Buffer
	require.Equal(t, 2, run(context.Background(), nil, &stdout, &stderr))
	require.Contains(t, stderr.String(), "usage:")
	require.Equal(t, 2, run(context.Background(), []string{"bogus"}, &stdout, &stderr))
	require.Contains(t, stderr.String(), `unknown command "bogus"`)
	require.Equal(t, 0, run(context.Background(), []string{"help"}, &stdout, &stderr))
	require.Contains(t, stdout.String(), "minibroker serve")
	require.Equal(t, 0, run(context.Background(), []string{"serve", "-h"}, &stdout, &stderr))
	require.Contains(t, stderr.String(), "-min-session-timeout")
}

func TestServeCorruptOffsetsFileStopsStartup(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "offsets.json")
	require.NoError(t, os.WriteFile(path, []byte(`{"version":1,"groups":{`), 0o644))
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"serve", "--listen", "127.0.0.1:0", "--data-dir", dir}, &stdout, &stderr)
	require.Equal(t, 1, code)
	require.Contains(t, stderr.String(), "corrupt offsets file "+path)
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, `{"version":1,"groups":{`, string(data), "the corrupt file is left as it was")
}

func TestServeUnusableDataDir(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "plain-file")
	require.NoError(t, os.WriteFile(file, nil, 0o644))
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"serve", "--listen", "127.0.0.1:0", "--data-dir", file}, &stdout, &stderr)
	require.Equal(t, 1, code)
	require.Contains(t, stderr.String(), "data dir")
}

// buildBinary builds minibroker once per test binary run.
var buildBinary = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "minibroker-bin-")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "minibroker")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		return "", &buildError{out: string(out), err: err}
	}
	return bin, nil
})

type buildError struct {
	out string
	err error
}

func (e *buildError) Error() string { return e.err.Error() + ": " + e.out }

// process is a running minibroker binary.
type process struct {
	cmd    *exec.Cmd
	addr   string
	stderr *lockedBuffer
	done   chan error
}

type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

var readyLine = regexp.MustCompile(`msg="minibroker ready" addr=(\S+)`)

// startBinary runs "minibroker serve" with args and waits for its ready line.
func startBinary(t *testing.T, args ...string) *process {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin, err := buildBinary()
	require.NoError(t, err)
	p := &process{stderr: &lockedBuffer{}, done: make(chan error, 1)}
	p.cmd = exec.Command(bin, append([]string{"serve", "--listen", "127.0.0.1:0"}, args...)...)
	pipe, err := p.cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, p.cmd.Start())
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		<-p.done
	})
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pipe)
		for sc.Scan() {
			line := sc.Text()
			p.stderr.Write([]byte(line + "\n"))
			if m := readyLine.FindStringSubmatch(line); m != nil {
				ready <- m[1]
			}
		}
		_, _ = io.Copy(io.Discard, pipe)
		p.done <- p.cmd.Wait()
	}()
	select {
	case p.addr = <-ready:
	case <-time.After(30 * time.Second):
		t.Fatalf("no ready line; stderr:\n%s", p.stderr.String())
	}
	return p
}

// stop sends sig and returns the exit code.
func (p *process) stop(t *testing.T, sig os.Signal) int {
	t.Helper()
	require.NoError(t, p.cmd.Process.Signal(sig))
	select {
	case err := <-p.done:
		p.done <- err // for the cleanup
		if err == nil {
			return 0
		}
		var exit *exec.ExitError
		require.ErrorAs(t, err, &exit)
		return exit.ExitCode()
	case <-time.After(10 * time.Second):
		t.Fatalf("no exit within 10 s after %v; stderr:\n%s", sig, p.stderr.String())
		return -1
	}
}

func TestBinaryServesCommitsAndShutsDownOnSignal(t *testing.T) {
	t.Parallel()
	for _, sig := range []os.Signal{syscall.SIGTERM, os.Interrupt} {
		t.Run(sig.String(), func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			p := startBinary(t, "--data-dir", dir, "--topic", "orders:4", "--topic", "payments:1")
			require.Equal(t, 1, strings.Count(p.stderr.String(), "minibroker ready"))

			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			c, err := protocol.Dial(ctx, p.addr, "binary-test")
			require.NoError(t, err)
			defer c.Close()

			meta := kmsg.NewPtrMetadataRequest()
			meta.SetVersion(12)
			resp, err := c.Request(ctx, meta)
			require.NoError(t, err)
			mr := resp.(*kmsg.MetadataResponse)
			require.Len(t, mr.Topics, 2)
			require.Equal(t, "orders", *mr.Topics[0].Topic)
			require.Len(t, mr.Topics[0].Partitions, 4)

			commit := kmsg.NewPtrOffsetCommitRequest()
			commit.SetVersion(8)
			commit.Group, commit.Generation = "manual", -1
			commit.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "orders", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 2, Offset: 42, LeaderEpoch: -1}}}}
			resp, err = c.Request(ctx, commit)
			require.NoError(t, err)
			require.Equal(t, int16(0), resp.(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode)

			require.Equal(t, 0, p.stop(t, sig))
			require.Contains(t, p.stderr.String(), "minibroker stopped")
			data, err := os.ReadFile(filepath.Join(dir, "offsets.json"))
			require.NoError(t, err)
			require.Contains(t, string(data), `"offset": 42`)
		})
	}
}

func TestBinaryTopicsPersistInDataDir(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := startBinary(t, "--data-dir", dir, "--topic", "invoices:3")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := protocol.Dial(ctx, p.addr, "binary-test")
	require.NoError(t, err)
	create := kmsg.NewPtrCreateTopicsRequest()
	create.SetVersion(7)
	create.Topics = []kmsg.CreateTopicsRequestTopic{{Topic: "audit", NumPartitions: 2, ReplicationFactor: 1}}
	resp, err := c.Request(ctx, create)
	require.NoError(t, err)
	require.Equal(t, int16(0), resp.(*kmsg.CreateTopicsResponse).Topics[0].ErrorCode)
	c.Close()
	require.Equal(t, 0, p.stop(t, syscall.SIGTERM))

	p = startBinary(t, "--data-dir", dir)
	c, err = protocol.Dial(ctx, p.addr, "binary-test")
	require.NoError(t, err)
	defer c.Close()
	meta := kmsg.NewPtrMetadataRequest()
	meta.SetVersion(12)
	r, err := c.Request(ctx, meta)
	require.NoError(t, err)
	topics := map[string]int{}
	for _, tp := range r.(*kmsg.MetadataResponse).Topics {
		topics[*tp.Topic] = len(tp.Partitions)
	}
	require.Equal(t, map[string]int{"audit": 2, "invoices": 3}, topics)
}
