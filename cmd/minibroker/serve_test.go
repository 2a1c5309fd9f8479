package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/goleak"

	"github.com/minibroker/minibroker/internal/testutil"
	"github.com/minibroker/minibroker/wireclient"
)

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

// TestServeAddressInUse: a Kafka or admin address another process holds
// stops serve before the data dir is made, with one line naming the
// flag that moves it and the make run variable that sets that flag.
func TestServeAddressInUse(t *testing.T) {
	t.Parallel()
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { taken.Close() })
	addr := taken.Addr().String()
	makefile, err := os.ReadFile(filepath.Join("..", "..", "Makefile"))
	require.NoError(t, err)
	for _, tc := range []struct {
		flag, makeVar string
		args          []string
	}{
		{"listen", "LISTEN", []string{"--listen", addr}},
		{"admin", "ADMIN", []string{"--listen", "127.0.0.1:0", "--admin", addr}},
	} {
		t.Run(tc.flag, func(t *testing.T) {
			t.Parallel()
			dir := filepath.Join(t.TempDir(), "data")
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), append([]string{"serve", "--data-dir", dir}, tc.args...), &stdout, &stderr)
			require.Equal(t, 1, code)
			require.Equal(t, "minibroker serve: --"+tc.flag+" "+addr+": the address is in use (another minibroker, a make run, or another program holds it); give another with --"+tc.flag+" ADDR (make run "+tc.makeVar+"=ADDR)\n", stderr.String())
			require.NoDirExists(t, dir)
			// The variable the line names is the one make run passes to the flag.
			require.Contains(t, string(makefile), "--"+tc.flag+" $("+tc.makeVar+")")
		})
	}
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

// process is a running minibroker binary.
type process struct {
	cmd    *exec.Cmd
	addr   string
	stderr *testutil.Buffer
	done   chan error
}

var readyLine = regexp.MustCompile(`msg="minibroker ready" addr=(\S+)`)

// startBinary runs "minibroker serve" with args and waits for its ready line.
func startBinary(t *testing.T, args ...string) *process {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := testutil.BuildMain(t, "github.com/minibroker/minibroker/cmd/minibroker")
	p := &process{stderr: &testutil.Buffer{}, done: make(chan error, 1)}
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
			c, err := wireclient.Dial(ctx, p.addr, "binary-test")
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
	c, err := wireclient.Dial(ctx, p.addr, "binary-test")
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
	c, err = wireclient.Dial(ctx, p.addr, "binary-test")
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

// serveInProcess runs "minibroker serve" with args in this process until
// the returned cancel is called, and waits for its ready line. It returns
// the bound address, the log so far and the exit code channel. It listens
// on 127.0.0.1:0 unless args say otherwise: never on the default port, which
// a `make run` beside the tests holds.
func serveInProcess(t *testing.T, args ...string) (addr string, logs *testutil.Buffer, cancel context.CancelFunc, code chan int) {
	t.Helper()
	if !slices.Contains(args, "--listen") {
		args = append([]string{"--listen", "127.0.0.1:0"}, args...)
	}
	logs = &testutil.Buffer{}
	ctx, cancel := context.WithCancel(context.Background())
	code = make(chan int, 1)
	go func() { code <- run(ctx, append([]string{"serve"}, args...), io.Discard, logs) }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if m := readyLine.FindStringSubmatch(logs.String()); m != nil {
			return m[1], logs, cancel, code
		}
		select {
		case c := <-code:
			t.Fatalf("serve exited with %d before it was ready:\n%s", c, logs.String())
		case <-time.After(2 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			cancel()
			t.Fatalf("no ready line:\n%s", logs.String())
		}
	}
}

// TestServeWarnsWhenPlaintextIsExposed: listening on every interface
// without TLS logs a warning; loopback, or TLS, does not.
func TestServeWarnsWhenPlaintextIsExposed(t *testing.T) {
	t.Parallel()
	p := testutil.NewPKI(t)
	const warning = "listening on a non-loopback address without TLS"
	cases := []struct {
		name string
		args []string
		warn bool
	}{
		{"loopback", []string{"--listen", "127.0.0.1:0"}, false},
		{"all interfaces", []string{"--listen", "0.0.0.0:0"}, true},
		{"all interfaces with TLS", []string{"--listen", "0.0.0.0:0", "--tls-cert", p.ServerCertFile, "--tls-key", p.ServerKeyFile}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, logs, cancel, code := serveInProcess(t, append(tc.args, "--data-dir", t.TempDir())...)
			cancel()
			require.Equal(t, 0, <-code)
			require.Equal(t, tc.warn, strings.Contains(logs.String(), warning), logs.String())
			if tc.warn {
				require.Contains(t, logs.String(), "level=WARN")
			}
		})
	}
}

// TestServeShutdownUnderLoad is SIGTERM's path in process (main cancels
// the context that serve runs under) while 100 clients commit: serve
// exits 0 within 5 s, every commit acknowledged with NONE before that is
// in offsets.json, and no goroutine is left behind (goleak). Not
// parallel: goleak watches the whole process.
func TestServeShutdownUnderLoad(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	const clients = 100
	dir := t.TempDir()
	addr, logs, cancel, code := serveInProcess(t, "--listen", "127.0.0.1:0", "--data-dir", dir, "--topic", "storm:"+strconv.Itoa(clients))
	defer cancel()

	acked := make([]atomic.Int64, clients) // highest offset acknowledged with NONE, per partition
	var started, wg sync.WaitGroup
	started.Add(clients)
	for p := range clients {
		wg.Go(func() {
			ctx, stop := context.WithTimeout(context.Background(), 20*time.Second)
			defer stop()
			c, err := wireclient.Dial(ctx, addr, "storm")
			started.Done()
			if err != nil {
				t.Errorf("dial: %v", err)
				return
			}
			defer c.Close()
			for offset := int64(1); ; offset++ {
				req := kmsg.NewPtrOffsetCommitRequest()
				req.SetVersion(9)
				req.Group, req.Generation = "storm", -1
				req.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "storm", Partitions: []kmsg.OffsetCommitRequestTopicPartition{
					{Partition: int32(p), Offset: offset, LeaderEpoch: -1},
				}}}
				resp, err := c.Request(ctx, req)
				if err != nil {
					return // the broker closed the connection: shutdown
				}
				if ec := resp.(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode; ec != 0 {
					t.Errorf("partition %d offset %d: error %d", p, offset, ec)
					return
				}
				acked[p].Store(offset)
			}
		})
	}
	started.Wait()
	// Let the storm run until every client has had commits acknowledged
	// and 20 per client have been in all.
	deadline := time.Now().Add(10 * time.Second)
	poll := time.NewTicker(time.Millisecond)
	defer poll.Stop()
	for ; ; <-poll.C {
		total, idle := int64(0), 0
		for p := range clients {
			n := acked[p].Load()
			total += n
			if n == 0 {
				idle++
			}
		}
		if idle == 0 && total >= 20*clients {
			break
		}
		require.True(t, time.Now().Before(deadline), "only %d commits acknowledged, %d clients none", total, idle)
	}
	start := time.Now()
	cancel()
	select {
	case c := <-code:
		require.Equal(t, 0, c, logs.String())
	case <-time.After(5 * time.Second):
		t.Fatalf("serve did not exit within 5 s of the signal:\n%s", logs.String())
	}
	t.Logf("serve exited %v after the signal", time.Since(start).Round(time.Millisecond))
	wg.Wait()
	require.Contains(t, logs.String(), "minibroker stopped")

	onDisk := readOffsetsFile(t, filepath.Join(dir, "offsets.json"))["storm"]
	total := int64(0)
	for p := range clients {
		want := acked[p].Load()
		total += want
		require.GreaterOrEqual(t, onDisk[int32(p)], want, "partition %d: acknowledged offset lost", p)
	}
	t.Logf("%d commits acknowledged before the signal, all on disk", total)
}

// readOffsetsFile parses offsets.json in the chapter's format into group
// -> partition -> offset. Every topic here is "storm".
func readOffsetsFile(t *testing.T, path string) map[string]map[int32]int64 {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	var file struct {
		Version int `json:"version"`
		Groups  map[string][]struct {
			Topic     string `json:"topic"`
			Partition int32  `json:"partition"`
			Offset    int64  `json:"offset"`
		} `json:"groups"`
	}
	require.NoError(t, json.Unmarshal(data, &file), "offsets.json is valid JSON")
	require.Equal(t, 1, file.Version)
	out := map[string]map[int32]int64{}
	for g, entries := range file.Groups {
		out[g] = map[int32]int64{}
		for _, e := range entries {
			out[g][e.Partition] = e.Offset
		}
	}
	return out
}
