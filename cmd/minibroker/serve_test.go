package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"flag"
	"io"
	"log/slog"
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
		{"zero expiry", []string{"--expiry-interval", "0s"}, "--expiry-interval must not be 0: leave it out for its default, 100ms"},
		{"negative expiry", []string{"--expiry-interval", "-1s"}, "--expiry-interval must be positive, got -1s"},
		{"consumer heartbeat as long as the session", []string{"--consumer-session-timeout", "5s"}, "--consumer-heartbeat-interval (5s) must be positive and below --consumer-session-timeout (5s)"},
		{"zero consumer heartbeat", []string{"--consumer-heartbeat-interval", "0s"}, "--consumer-heartbeat-interval must not be 0: leave it out for its default, 5s"},
		{"negative consumer heartbeat", []string{"--consumer-heartbeat-interval", "-1s"}, "--consumer-heartbeat-interval (-1s) must be positive and below --consumer-session-timeout (45s)"},
		{"bad duration", []string{"--expiry-interval", "soon"}, `invalid value "soon" for flag -expiry-interval: want a duration with a unit: 10ms, 2s, 5m`},
		{"negative retention", []string{"--offsets-retention", "-1h"}, "--offsets-retention must not be negative, got -1h0m0s"},
		{"tiny frames", []string{"--max-frame-bytes", "10"}, "--max-frame-bytes"},
		{"bad log level", []string{"--log-level", "loud"}, `invalid value "loud" for flag -log-level: want debug, info, warn or error`},
		{"bad advertise", []string{"--advertise", "nohost"}, "--advertise must be HOST:PORT"},
		{"stray argument", []string{"extra"}, `unexpected argument "extra"`},
		{"empty data dir", []string{"--data-dir", ""}, "--data-dir must not be empty"},
		{"too many partitions", []string{"--topic", "orders:100001"}, "at most 100000"},
		{"zero connections", []string{"--max-connections", "0"}, "--max-connections must not be 0: leave it out for its default, 10000"},
		{"negative connections", []string{"--max-connections", "-1"}, "--max-connections must be at least 1, got -1"},
		{"zero idle timeout", []string{"--idle-timeout", "0s"}, "--idle-timeout must not be 0: leave it out for its default, 10m0s"},
		{"negative idle timeout", []string{"--idle-timeout", "-1m"}, "--idle-timeout must be positive, got -1m0s"},
		{"negative frame timeout", []string{"--frame-read-timeout", "-1s"}, "--frame-read-timeout must be positive"},
		{"zero group size", []string{"--max-group-size", "0"}, "--max-group-size must not be 0: leave it out for its default, 1000"},
		{"negative group size", []string{"--max-group-size", "-1"}, "--max-group-size must be at least 1, got -1"},
		{"zero groups", []string{"--max-groups", "0"}, "--max-groups must not be 0: leave it out for its default, 100000"},
		{"negative groups", []string{"--max-groups", "-5"}, "--max-groups must be at least 1, got -5"},
		{"zero metadata", []string{"--max-metadata-bytes", "0"}, "--max-metadata-bytes must not be 0: leave it out for its default, 4096"},
		{"metadata above Kafka's", []string{"--max-metadata-bytes", "4097"}, "--max-metadata-bytes must be between 1 and 4096"},
		{"zero id bytes", []string{"--max-id-bytes", "0"}, "--max-id-bytes must not be 0: leave it out for its default, 255"},
		{"negative id bytes", []string{"--max-id-bytes", "-1"}, "--max-id-bytes must be between 1 and 32735, got -1"},
		{"id bytes beyond the protocol", []string{"--max-id-bytes", "40000"}, "--max-id-bytes must be between 1 and 32735"},
		{"tiny segments", []string{"--segment-bytes", "100"}, "--segment-bytes must be between 1024"},
		{"negative retention", []string{"--retention-bytes", "-1"}, "--retention-bytes must not be negative"},
		{"batch smaller than its header", []string{"--max-message-bytes", "60"}, "--max-message-bytes must be between 61"},
		{"zero default partitions", []string{"--default-partitions", "0"}, "--default-partitions must not be 0: leave it out for its default, 1"},
		{"too many default partitions", []string{"--default-partitions", "100001"}, "--default-partitions must be between 1 and 100000, got 100001"},
		{"zero fetch bytes", []string{"--max-fetch-bytes", "0"}, "--max-fetch-bytes must not be 0: leave it out for its default, 57671680"},
		{"negative fetch bytes", []string{"--max-fetch-bytes", "-1"}, "--max-fetch-bytes must be between 1 and 2147483647, got -1"},
		{"fetch bytes past 32 bits", []string{"--max-fetch-bytes", "2147483648"}, `invalid value "2147483648" for flag -max-fetch-bytes: value out of range`},
		{"zero fetch wait", []string{"--max-fetch-wait", "0s"}, "--max-fetch-wait must not be 0: leave it out for its default, 5s"},
		{"negative fetch wait", []string{"--max-fetch-wait", "-1s"}, "--max-fetch-wait must be positive, got -1s"},
		{"budget below the frame cap", []string{"--max-frame-bytes", "2048", "--max-inflight-bytes", "2047"}, "--max-inflight-bytes (2047) must be at least --max-frame-bytes (2048)"},
		{"member metadata past the group's", []string{"--max-member-metadata-bytes", "2000", "--max-group-metadata-bytes", "1000"}, "--max-member-metadata-bytes (2000) must be positive and at most --max-group-metadata-bytes (1000)"},
		{"negative transaction timeout", []string{"--transaction-max-timeout", "-1m"}, "--transaction-max-timeout must be positive, got -1m0s"},
		{"zero transaction timeout", []string{"--transaction-max-timeout", "0s"}, "--transaction-max-timeout must not be 0: leave it out for its default, 15m0s"},
		{"cert without key", []string{"--tls-cert", "server.pem"}, "--tls-cert and --tls-key must be given together"},
		{"key without cert", []string{"--tls-key", "server.key"}, "--tls-cert and --tls-key must be given together"},
		{"client CA alone", []string{"--tls-client-ca", "ca.pem"}, "--tls-cert and --tls-key must be given together"},
		{"missing cert file", []string{"--tls-cert", "/nonexistent/server.pem", "--tls-key", "/nonexistent/server.key"}, "--tls-cert /nonexistent/server.pem"},
		{"sasl user without a colon", []string{"--sasl-user", "alice"}, `invalid value "alice" for flag -sasl-user: want NAME:PASSWORD, got no ':'`},
		{"sasl user without a name", []string{"--sasl-user", ":secret"}, "want NAME:PASSWORD, got an empty name"},
		{"sasl user without a password", []string{"--sasl-user", "alice:"}, `want NAME:PASSWORD, got an empty password for "alice"`},
		{"sasl user twice", []string{"--sasl-user", "alice:a", "--sasl-user", "alice:b"}, `user "alice" given twice`},
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

// TestServeBadFlagValuesCreateNothing: a flag value the broker would
// refuse only at start (a port past 65535, an admin API off loopback
// without a token, a duration without a unit) is a usage error too: one
// line, status 2, and the data directory is not created.
func TestServeBadFlagValuesCreateNothing(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"listen port out of range", []string{"--listen", "127.0.0.1:99999"}, `minibroker serve: --listen "127.0.0.1:99999": the port must be a number from 0 to 65535 (minibroker serve -h lists the flags)`},
		{"admin off loopback without a token", []string{"--admin", "0.0.0.0:9644"}, "minibroker serve: broker: the admin API on 0.0.0.0:9644, not a loopback address, needs an AdminToken (--admin-token) (minibroker serve -h lists the flags)"},
		{"admin port not a number", []string{"--admin", "127.0.0.1:http"}, `minibroker serve: --admin "127.0.0.1:http": the port must be a number from 0 to 65535 (minibroker serve -h lists the flags)`},
		{"duration without a unit", []string{"--expiry-interval", "10"}, `minibroker serve: invalid value "10" for flag -expiry-interval: want a duration with a unit: 10ms, 2s, 5m (minibroker serve -h lists the flags)`},
		{"session timeout without a unit", []string{"--max-session-timeout", "30"}, `minibroker serve: invalid value "30" for flag -max-session-timeout: want a duration with a unit: 10ms, 2s, 5m (minibroker serve -h lists the flags)`},
		{"log level not a level", []string{"--log-level", "loud"}, `minibroker serve: invalid value "loud" for flag -log-level: want debug, info, warn or error (minibroker serve -h lists the flags)`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := filepath.Join(t.TempDir(), "data")
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), append([]string{"serve", "--data-dir", dir}, tc.args...), &stdout, &stderr)
			require.Equal(t, 2, code)
			require.Equal(t, tc.want+"\n", stderr.String())
			require.NoDirExists(t, dir)
		})
	}
}

// TestServeHelpNamesDurations: -h still says which flags take a duration.
func TestServeHelpNamesDurations(t *testing.T) {
	t.Parallel()
	var stdout, stderr bytes.Buffer
	require.Equal(t, 0, run(context.Background(), []string{"serve", "-h"}, &stdout, &stderr))
	require.Contains(t, stderr.String(), "  -expiry-interval duration\n")
	require.Contains(t, stderr.String(), "(default 100ms)")
}

// TestServeLogLevelFlag: --log-level takes the four level names in any
// case, defaults to info, and -h lists the names and the default.
func TestServeLogLevelFlag(t *testing.T) {
	t.Parallel()
	for arg, want := range map[string]slog.Level{"debug": slog.LevelDebug, "INFO": slog.LevelInfo, "Warn": slog.LevelWarn, "error": slog.LevelError} {
		f, err := parseServeFlags([]string{"--log-level", arg}, io.Discard)
		require.NoError(t, err, arg)
		require.Equal(t, want, f.logLevel, arg)
	}
	f, err := parseServeFlags(nil, io.Discard)
	require.NoError(t, err)
	require.Equal(t, slog.LevelInfo, f.logLevel)
	var help bytes.Buffer
	_, err = parseServeFlags([]string{"-h"}, &help)
	require.ErrorIs(t, err, flag.ErrHelp)
	require.Contains(t, help.String(), "  -log-level LEVEL\n    \tLEVEL of the least severe line logged: debug, info, warn or error (default info)\n")
}

// TestServeSASLUserFlag: repeated --sasl-user flags make the users; the
// password is everything after the first ':'; none leaves SASL off.
func TestServeSASLUserFlag(t *testing.T) {
	t.Parallel()
	f, err := parseServeFlags(nil, io.Discard)
	require.NoError(t, err)
	require.Empty(t, f.saslUsers)
	f, err = parseServeFlags([]string{"--sasl-user", "alice:a:b:c", "--sasl-user", "bob:pw"}, io.Discard)
	require.NoError(t, err)
	require.Equal(t, saslUserFlags{"alice": "a:b:c", "bob": "pw"}, f.saslUsers)
}

// TestServeOffsetsRetentionFlag: --offsets-retention is off (0) unless
// given, and -h documents it.
func TestServeOffsetsRetentionFlag(t *testing.T) {
	t.Parallel()
	f, err := parseServeFlags(nil, io.Discard)
	require.NoError(t, err)
	require.Zero(t, f.cfg.OffsetsRetention)
	f, err = parseServeFlags([]string{"--offsets-retention", "168h"}, io.Discard)
	require.NoError(t, err)
	require.Equal(t, 7*24*time.Hour, f.cfg.OffsetsRetention)
	var help bytes.Buffer
	_, err = parseServeFlags([]string{"-h"}, &help)
	require.ErrorIs(t, err, flag.ErrHelp)
	require.Contains(t, help.String(), "-offsets-retention duration")
	require.Contains(t, help.String(), "offsets.retention.minutes); 0 keeps them for ever")
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

func TestLoadTLS(t *testing.T) {
	t.Parallel()
	p := testutil.NewPKI(t)
	notPEM := filepath.Join(t.TempDir(), "ca.txt")
	require.NoError(t, os.WriteFile(notPEM, []byte("not a certificate"), 0o600))

	cfg, err := loadTLS("", "", "")
	require.NoError(t, err)
	require.Nil(t, cfg, "no flags: plaintext")

	cfg, err = loadTLS(p.ServerCertFile, p.ServerKeyFile, "")
	require.NoError(t, err)
	require.Len(t, cfg.Certificates, 1)
	require.Equal(t, tls.NoClientCert, cfg.ClientAuth)
	require.Equal(t, uint16(tls.VersionTLS12), cfg.MinVersion)

	cfg, err = loadTLS(p.ServerCertFile, p.ServerKeyFile, p.CAFile)
	require.NoError(t, err)
	require.Equal(t, tls.RequireAndVerifyClientCert, cfg.ClientAuth)
	require.NotNil(t, cfg.ClientCAs)

	_, err = loadTLS(p.ServerCertFile, p.CAFile, "")
	require.ErrorContains(t, err, "--tls-cert "+p.ServerCertFile, "a key that is not a key")
	_, err = loadTLS(p.ServerCertFile, p.ServerKeyFile, notPEM)
	require.ErrorContains(t, err, "holds no PEM certificate")
	_, err = loadTLS(p.ServerCertFile, p.ServerKeyFile, notPEM+".missing")
	require.ErrorContains(t, err, "--tls-client-ca")

	for _, args := range [][]string{
		{"--tls-cert", p.ServerCertFile, "--tls-key", p.CAFile},
		{"--tls-cert", p.ServerCertFile, "--tls-key", p.ServerKeyFile, "--tls-client-ca", notPEM},
	} {
		var stdout, stderr bytes.Buffer
		require.Equal(t, 2, run(context.Background(), append([]string{"serve"}, args...), &stdout, &stderr), "%v", args)
		require.Contains(t, stderr.String(), "minibroker serve: --tls-")
	}
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

// TestReadmeServeFlagDefaults: each row of the README's serve-flags table
// gives the default serve -h gives: the same value where the cell quotes
// one (a duration as a duration: 30m is 30m0s), and a zero default where
// it says in words what zero means (off, none, plaintext).
// integration's TestReadmeServeFlagsTable checks that the rows are
// exactly the flags.
func TestReadmeServeFlagDefaults(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	require.NoError(t, err)
	_, table, ok := strings.Cut(string(data), "## `minibroker serve` flags")
	require.True(t, ok)
	table, _, _ = strings.Cut(table, "\n## ")
	_, fs := newServeFlags()
	defaults := map[string]string{}
	fs.VisitAll(func(fl *flag.Flag) { defaults[fl.Name] = fl.DefValue })
	flagName := regexp.MustCompile("`--([a-z-]+)")
	quoted := regexp.MustCompile("^`([^`]*)`")
	rows := 0
	for _, row := range strings.Split(table, "\n") {
		cells := strings.Split(strings.ReplaceAll(row, `\|`, "/"), "|") // `real\|manual`
		if len(cells) < 4 || !strings.Contains(cells[1], "`--") {
			continue
		}
		want := strings.TrimSpace(cells[2])
		for _, m := range flagName.FindAllStringSubmatch(cells[1], -1) {
			rows++
			have, ok := defaults[m[1]]
			require.True(t, ok, "README names --%s, which serve does not have", m[1])
			q := quoted.FindStringSubmatch(want)
			if q == nil {
				require.Contains(t, []string{"", "0", "0s", "false"}, have, "--%s: README says %q", m[1], want)
				continue
			}
			if hd, err := time.ParseDuration(have); err == nil && strings.HasSuffix(have, "s") {
				d, err := time.ParseDuration(q[1])
				require.NoError(t, err, "--%s: README default %q", m[1], q[1])
				require.Equal(t, hd, d, "--%s", m[1])
				continue
			}
			require.True(t, strings.EqualFold(have, q[1]), "--%s: README default %q, serve -h %q", m[1], q[1], have)
		}
	}
	require.Equal(t, len(defaults), rows, "every flag has its row")
}
