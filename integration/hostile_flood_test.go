package integration

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/broker"
	"github.com/minibroker/minibroker/broker/adminapi"
	"github.com/minibroker/minibroker/testkit/wiretest"
)

// floodConns is how many hostile connections TestHostileConnectionFlood
// holds open; floodGarbage how many more send garbage and are closed.
const (
	floodConns   = 10_000
	floodGarbage = 1_000
)

// floodPerConnBytes bounds the server's heap and stack growth per open
// half-frame connection. What one costs: a goroutine (its stack, 8 KiB
// here), a 4 KiB read buffer, at most 4 KiB of the frame it has started
// (protocol.ReadFrame grows a frame only as its bytes arrive), and a few
// hundred bytes of connection state. Measured at about 15 KiB; the bound
// leaves room for the race detector and the runtime's own slack.
const floodPerConnBytes = 24 << 10

// Environment of TestHostileFloodChild, the process that opens the flood.
const (
	floodAddrEnv    = "MINIBROKER_FLOOD_ADDR"
	floodConnsEnv   = "MINIBROKER_FLOOD_CONNS"
	floodGarbageEnv = "MINIBROKER_FLOOD_GARBAGE"
)

// openConnections reads the gauge minibroker_connections, the Kafka
// connections the broker holds open, from its admin API's /metrics.
func openConnections(t *testing.T, b *testBroker) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", "http://"+b.AdminAddr()+"/metrics", nil)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "minibroker_connections "); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			require.NoError(t, err, "minibroker_connections %q", v)
			return n
		}
	}
	require.NoError(t, sc.Err())
	t.Fatal("no minibroker_connections in /metrics")
	return 0
}

// raiseFileLimit raises this process's soft RLIMIT_NOFILE to its hard
// limit (children inherit it) and returns the new soft limit.
func raiseFileLimit(t *testing.T) uint64 {
	t.Helper()
	var lim syscall.Rlimit
	require.NoError(t, syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim))
	if lim.Cur < lim.Max {
		lim.Cur = lim.Max
		require.NoError(t, syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim))
	}
	return lim.Cur
}

// serverFootprint is the heap and goroutine stacks in use after a GC.
func serverFootprint() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse + ms.StackInuse
}

// TestHostileConnectionFlood: 10,000 connections that each start a frame
// and stall (half frames of several shapes), plus 1,000 that send garbage,
// opened by a child process against an in-process broker. The broker
// closes the garbage at once, holds each half frame at a bounded cost
// (floodPerConnBytes, measured as heap plus stacks before and during the
// flood), and a well-behaved client's heartbeats keep succeeding, each
// within a second, throughout.
//
// Not parallel: it measures this process's memory and uses most of its
// file descriptors. Each side of the flood lives in its own process so
// that the broker's 10,000 descriptors fit the usual limit of 20,000; if
// the hard limit is lower, the flood is scaled down, and the log says so.
func TestHostileConnectionFlood(t *testing.T) {
	if testing.Short() {
		t.Skip("opens 11,000 connections")
	}
	n := floodConns
	if limit := raiseFileLimit(t); limit < uint64(n)+512 {
		n = int(limit) - 512
		t.Logf("RLIMIT_NOFILE is %d: scaled the flood down to %d connections", limit, n)
	}
	b := startBroker(t, func(cfg *broker.Config) {
		cfg.MaxConnections = n + 64 // the flood, the well-behaved client, and garbage in flight
		// Longer than the test, so that every half frame is still held
		// when the memory is measured; the timeouts' own tests are in
		// server/conn_test.go and hostile_limits_test.go.
		cfg.IdleTimeout, cfg.FrameReadTimeout = 5*time.Minute, 5*time.Minute
		cfg.Admin, cfg.AdminAPI = "127.0.0.1:0", adminapi.New // for openConnections
		// Errors only, and nothing recorded: the flood is warned about
		// 11,000 times.
		cfg.Logger = slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelError}))
	})

	good := wiretest.Dial(t, b.Addr(), "good")
	member := join(t, good, "g", "orders")
	var heartbeats, failures atomic.Int64
	var slowest atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() { // owns good from here on
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			// 5 s tells a heartbeat starved behind the flood (it would wait
			// out the 5-minute timeouts) from a slow machine; how fast
			// the heartbeats are is logged, not asserted.
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			start := time.Now()
			resp, err := good.Request(ctx, wiretest.HeartbeatRequest(4, "g", member.MemberID, member.Generation))
			cancel()
			if err != nil || resp.(*kmsg.HeartbeatResponse).ErrorCode != 0 {
				failures.Add(1)
				continue
			}
			heartbeats.Add(1)
			if d := int64(time.Since(start)); d > slowest.Load() {
				slowest.Store(d)
			}
		}
	})
	defer func() {
		close(stop)
		wg.Wait()
	}()

	before := serverFootprint()
	start := time.Now()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHostileFloodChild$", "-test.count=1", "-test.v=false")
	cmd.Env = append(os.Environ(), floodAddrEnv+"="+b.Addr(), floodConnsEnv+"="+strconv.Itoa(n), floodGarbageEnv+"="+strconv.Itoa(floodGarbage))
	cmd.Stderr = t.Output()
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	defer func() {
		stdin.Close() // the child closes its connections and exits
		_ = cmd.Wait()
	}()
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			ready <- sc.Text()
		}
		close(ready)
	}()
	select {
	case line, ok := <-ready:
		require.True(t, ok, "the flood child exited without opening its connections")
		require.Equal(t, fmt.Sprintf("ready %d %d", n, floodGarbage), line, "the child's report: half frames held, garbage closed by the broker")
	case <-time.After(90 * time.Second):
		t.Fatal("the flood child did not open its connections within 90 s")
	}
	opened := time.Since(start)
	eventually(t, func() bool { return openConnections(t, b) == int64(n)+1 }, "the broker serves the flood and the good client")

	// The goroutines read their partial frames just after accepting them;
	// take the largest of a few readings once the count is reached.
	during := serverFootprint()
	for range 3 {
		during = max(during, serverFootprint())
	}
	perConn := (int64(during) - int64(before)) / int64(n)
	t.Logf("%d half-frame connections (+%d garbage) opened in %v; heap+stacks %d MiB -> %d MiB, %d bytes per connection",
		n, floodGarbage, opened.Round(time.Millisecond), before>>20, during>>20, perConn)
	assert.Less(t, perConn, int64(floodPerConnBytes), "memory per stalled connection")

	// The good client was served all along.
	seen := heartbeats.Load()
	eventually(t, func() bool { return heartbeats.Load() >= seen+5 }, "heartbeats go on during the flood")
	assert.Zero(t, failures.Load(), "no heartbeat failed or waited 5 s")
	t.Logf("%d heartbeats, slowest %v", heartbeats.Load(), time.Duration(slowest.Load()).Round(time.Microsecond))

	stdin.Close()
	require.NoError(t, cmd.Wait())
	eventually(t, func() bool { return openConnections(t, b) == 1 }, "the flood's connections are released")
}

// floodShapes are the half frames the child sends, in turn: each starts a
// frame and stops.
var floodShapes = [][]byte{
	{0, 0},                              // two bytes of the size
	{0, 16, 0, 0, 0, 12, 0, 4, 0, 0, 0}, // a 1 MiB frame announced, its header begun
	{0, 0, 0, 40, 0, 12, 0, 4, 0, 0, 0, 1, 0, 1, 'c', 1, 1},                 // a heartbeat cut short
	append(binary.BigEndian.AppendUint32(nil, 3000), make([]byte, 1500)...), // half of a 3000-byte frame
}

// TestHostileFloodChild is the process TestHostileConnectionFlood starts:
// it opens the garbage connections and waits for the broker to close each,
// opens the half-frame connections, prints "ready <half frames>
// <garbage closed>", and holds everything open until its stdin closes.
func TestHostileFloodChild(t *testing.T) {
	addr := os.Getenv(floodAddrEnv)
	if addr == "" {
		t.Skip("run by TestHostileConnectionFlood")
	}
	n, err := strconv.Atoi(os.Getenv(floodConnsEnv))
	require.NoError(t, err)
	garbage, err := strconv.Atoi(os.Getenv(floodGarbageEnv))
	require.NoError(t, err)

	conns := make([]net.Conn, n)
	var closedByBroker atomic.Int64
	work := make(chan int)
	var wg sync.WaitGroup
	var firstErr atomic.Value
	for range 32 { // dialers: enough to be quick, few enough for the accept queue
		wg.Go(func() {
			for i := range work {
				c, err := net.DialTimeout("tcp", addr, 30*time.Second)
				if err != nil {
					firstErr.CompareAndSwap(nil, err)
					continue
				}
				if i < 0 { // garbage: a negative size, then more junk
					_, _ = c.Write([]byte{0xff, 0xff, 0xff, 0xf0, 0xde, 0xad, 0xbe, 0xef})
					_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
					if _, err := c.Read(make([]byte, 1)); err == io.EOF || isConnReset(err) {
						closedByBroker.Add(1)
					}
					c.Close()
					continue
				}
				if _, err := c.Write(floodShapes[i%len(floodShapes)]); err != nil {
					firstErr.CompareAndSwap(nil, err)
				}
				conns[i] = c
			}
		})
	}
	for i := range garbage {
		work <- -1 - i
	}
	for i := range n {
		work <- i
	}
	close(work)
	wg.Wait()
	if err, ok := firstErr.Load().(error); ok {
		t.Fatalf("flood child: %v", err)
	}
	fmt.Printf("ready %d %d\n", n, closedByBroker.Load())
	_, _ = io.Copy(io.Discard, os.Stdin)
	for _, c := range conns {
		c.Close()
	}
}

func isConnReset(err error) bool {
	var se syscall.Errno
	return errors.As(err, &se) && se == syscall.ECONNRESET
}
