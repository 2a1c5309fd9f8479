package server

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"log/slog"
	"net"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/clock"
	"github.com/minibroker/minibroker/coordinator"
	"github.com/minibroker/minibroker/protocol"
	"github.com/minibroker/minibroker/testkit/coretest"
	"github.com/minibroker/minibroker/testkit/wiretest"
)

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	core := coretest.New(t, coretest.Config{Coordinator: coordinator.Config{Clock: clock.NewManual(time.UnixMilli(0))}})
	coord, cat, log := core.Coordinator, core.Catalog, core.Log
	tests := []struct {
		name    string
		cfg     Config
		wantErr string
	}{
		{"minimal", Config{Coordinator: coord}, ""},
		{"no catalog", Config{Coordinator: coord}, "Catalog is required"},
		{"no log", Config{Coordinator: coord}, "Log is required"},
		{"everything set", Config{Coordinator: coord, Advertise: "broker.example:19092",
			Settings: Settings{MaxFrameBytes: 1024, MaxFetchWait: time.Second}, ExpiryInterval: time.Second}, ""},
		{"ipv6 advertise", Config{Coordinator: coord, Advertise: "[::1]:9092"}, ""},
		{"no coordinator", Config{}, "Coordinator is required"},
		{"negative frame cap", Config{Coordinator: coord, Settings: Settings{MaxFrameBytes: -1}}, "server: MaxFrameBytes must be between 1024 and 1073741824, got -1"},
		{"frame cap below the smallest", Config{Coordinator: coord, Settings: Settings{MaxFrameBytes: 1023}}, "MaxFrameBytes must be between 1024"},
		{"budget below the frame cap", Config{Coordinator: coord, Settings: Settings{MaxFrameBytes: 2048, MaxInFlightBytes: 2047}}, "MaxInFlightBytes (2047) must be at least MaxFrameBytes (2048)"},
		{"negative expiry", Config{Coordinator: coord, ExpiryInterval: -time.Second}, "durations must not be negative"},
		{"negative fetch wait", Config{Coordinator: coord, Settings: Settings{MaxFetchWait: -time.Second}}, "server: MaxFetchWait must be positive, got -1s"},
		{"advertise without port", Config{Coordinator: coord, Advertise: "broker.example"}, "advertise"},
		{"advertise without host", Config{Coordinator: coord, Advertise: ":9092"}, "empty host"},
		{"advertise port not a number", Config{Coordinator: coord, Advertise: "h:x"}, "the port must be a number from 0 to 65535"},
		{"advertise port out of range", Config{Coordinator: coord, Advertise: "h:65536"}, "the port must be a number from 0 to 65535"},
		{"limits set", Config{Coordinator: coord, Settings: Settings{MaxConnections: 1, IdleTimeout: time.Second, FrameReadTimeout: time.Second}}, ""},
		{"negative connections", Config{Coordinator: coord, Settings: Settings{MaxConnections: -1}}, "server: MaxConnections must be at least 1, got -1"},
		{"negative idle timeout", Config{Coordinator: coord, Settings: Settings{IdleTimeout: -time.Second}}, "server: IdleTimeout must be positive, got -1s"},
		{"negative frame timeout", Config{Coordinator: coord, Settings: Settings{FrameReadTimeout: -time.Second}}, "server: FrameReadTimeout must be positive, got -1s"},
		{"negative fetch bytes", Config{Coordinator: coord, Settings: Settings{MaxFetchBytes: -1}}, "server: MaxFetchBytes must be between 1 and 2147483647, got -1"},
		{"partitions past the catalog's", Config{Coordinator: coord, Settings: Settings{DefaultPartitions: 100001}}, "server: DefaultPartitions must be between 1 and 100000, got 100001"},
		{"TLS without a certificate", Config{Coordinator: coord, TLS: &tls.Config{}}, "holds no certificate"},
		{"TLS with a certificate callback", Config{Coordinator: coord, TLS: &tls.Config{
			GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return nil, nil }}}, ""},
	}
	for i := range tests {
		if tests[i].name != "no catalog" && tests[i].cfg.Coordinator != nil {
			tests[i].cfg.Catalog = cat
		}
		if tests[i].name != "no log" && tests[i].cfg.Coordinator != nil {
			tests[i].cfg.Log = log
		}
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := tc.cfg.Validate()
			srv, newErr := New(tc.cfg)
			if tc.wantErr == "" {
				require.NoError(t, err)
				require.NoError(t, newErr)
				require.NotNil(t, srv)
				return
			}
			require.ErrorContains(t, err, tc.wantErr)
			require.Error(t, newErr, "New must refuse what Validate refuses")
			assert.Nil(t, srv)
		})
	}
}

func TestNewDefaults(t *testing.T) {
	t.Parallel()
	core := coretest.New(t, coretest.Config{Coordinator: coordinator.Config{Clock: clock.NewManual(time.UnixMilli(0))}})
	coord, cat, log := core.Coordinator, core.Catalog, core.Log
	srv, err := New(Config{Coordinator: coord, Catalog: cat, Log: log})
	require.NoError(t, err)
	assert.NotNil(t, srv.logger)
	assert.Equal(t, int32(protocol.DefaultMaxFrameBytes), srv.maxFrame)
	assert.Equal(t, 5*time.Second, srv.maxFetchWait)
	assert.Zero(t, srv.expiry, "no expiry ticker unless asked")
	assert.Equal(t, 10_000, srv.maxConns)
	assert.Equal(t, 10*time.Minute, srv.idleTimeout, "Kafka's connections.max.idle.ms")
	assert.Equal(t, 30*time.Second, srv.frameTimeout)
	assert.Nil(t, srv.tls, "plaintext unless asked")
	served := 0
	for key, a := range srv.handlers {
		_, advertised := protocol.VersionsFor(int16(key))
		assert.Equal(t, advertised, a.handle != nil, "key %d: advertised %v, served %v", key, advertised, a.handle != nil)
		if a.handle != nil {
			served++
		}
	}
	assert.Equal(t, len(protocol.SupportedVersions()), served)
}

// serverStacks returns the stacks of live goroutines running server code.
func serverStacks() []string {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	var out []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "minibroker/server.(*Server)") {
			out = append(out, g)
		}
	}
	return out
}

// TestServeShutdown cancels Serve with a client blocked in a read, one
// waiting in a long Fetch and one idle: Serve returns, every client sees
// EOF, and no goroutine is left. Not parallel: it counts goroutines.
func TestServeShutdown(t *testing.T) {
	e := newEnvWith(t, envOptions{realClock: true, config: func(cfg *Config) { cfg.ExpiryInterval = time.Millisecond }})
	baseline := runtime.NumGoroutine() // the env's own (the log's flusher) included
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- e.srv.Serve(ctx, ln) }()

	reader := wiretest.Dial(t, addr, "reader")
	wiretest.Do[*kmsg.ApiVersionsResponse](t, reader, apiVersionsRequest(3)) // the conn is being served
	fetcher := wiretest.Dial(t, addr, "fetcher")
	idle := wiretest.Dial(t, addr, "idle")
	wiretest.Do[*kmsg.ApiVersionsResponse](t, idle, apiVersionsRequest(0))

	readErr := make(chan error, 1)
	go func() {
		_ = reader.SetDeadline(time.Now().Add(testTimeout))
		_, err := reader.ReadFrame() // blocks: nothing was asked
		readErr <- err
	}()
	fetch := kmsg.NewPtrFetchRequest()
	fetch.Version, fetch.MaxWaitMillis, fetch.MinBytes = 12, int32(testTimeout/time.Millisecond), 1
	fetch.Topics = []kmsg.FetchRequestTopic{{Topic: "orders", Partitions: []kmsg.FetchRequestTopicPartition{{Partition: 0}}}}
	require.NoError(t, fetcher.Send(rawRequest(fetch, 0, "fetcher")))
	eventually(t, testTimeout, func() bool { return len(e.logs.Find("request")) >= 3 || stackHas("(*Server).handleFetch") },
		"the fetch is being handled")

	start := time.Now()
	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(testTimeout):
		t.Fatal("Serve did not return after cancel")
	}
	assert.Less(t, time.Since(start), testTimeout/2, "shutdown cuts the fetch wait short")

	select {
	case err := <-readErr:
		require.Error(t, err)
		var ne net.Error
		require.False(t, errors.As(err, &ne) && ne.Timeout(), "the blocked reader sees the close, not its deadline: %v", err)
		assert.True(t, errors.Is(err, io.EOF) || isReset(err), "the blocked reader sees EOF, got %v", err)
	case <-time.After(testTimeout):
		t.Fatal("blocked reader never woke")
	}
	// The fetch cut short by shutdown may still be answered, empty, just
	// before its connection closes.
	require.NoError(t, fetcher.SetDeadline(time.Now().Add(testTimeout)))
	if frame, err := fetcher.ReadFrame(); err == nil {
		assert.Equal(t, []byte{0, 0, 0, 0}, frame[:4], "only the fetch's answer, correlation id 0")
	}
	wiretest.RequireClosed(t, fetcher)
	wiretest.RequireClosed(t, idle)
	_, err = net.DialTimeout("tcp", addr, time.Second)
	assert.Error(t, err, "the listener is closed")

	assert.Empty(t, serverStacks(), "Serve returned with server goroutines alive")
	reader.Close()
	fetcher.Close()
	idle.Close()
	eventually(t, testTimeout, func() bool { return runtime.NumGoroutine() <= baseline },
		"goroutines back to the baseline")
}

func stackHas(fn string) bool {
	buf := make([]byte, 1<<20)
	return strings.Contains(string(buf[:runtime.Stack(buf, true)]), fn)
}

func TestServeCancelledContextReturnsAtOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	require.NoError(t, e.srv.Serve(ctx, ln))
	_, err = ln.Accept()
	assert.ErrorIs(t, err, net.ErrClosed, "Serve owns and closes the listener")
}

// fakeListener fails Accept with errs in turn, then blocks until Close.
type fakeListener struct {
	addr   net.Addr
	mu     sync.Mutex
	errs   []error // guarded by mu
	closed chan struct{}
	once   sync.Once
}

func newFakeListener(addr string, errs ...error) *fakeListener {
	return &fakeListener{addr: fakeAddr(addr), errs: errs, closed: make(chan struct{})}
}

func (l *fakeListener) Accept() (net.Conn, error) {
	l.mu.Lock()
	if len(l.errs) > 0 {
		err := l.errs[0]
		l.errs = l.errs[1:]
		l.mu.Unlock()
		return nil, err
	}
	l.mu.Unlock()
	<-l.closed
	return nil, net.ErrClosed
}

func (l *fakeListener) Close() error {
	l.once.Do(func() { close(l.closed) })
	return nil
}

func (l *fakeListener) Addr() net.Addr { return l.addr }

func (l *fakeListener) isClosed() bool {
	select {
	case <-l.closed:
		return true
	default:
		return false
	}
}

type fakeAddr string

func (a fakeAddr) Network() string { return "tcp" }
func (a fakeAddr) String() string  { return string(a) }

func TestServeUnusableAddress(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ln := newFakeListener("not-an-address")
	err := e.srv.Serve(t.Context(), ln)
	require.ErrorContains(t, err, `advertise "not-an-address"`)
	assert.True(t, ln.isClosed(), "Serve closes the listener it was given")
}

func TestServeRetriesAcceptErrors(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ln := newFakeListener("127.0.0.1:9", errors.New("too many open files"), errors.New("too many open files"))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.srv.Serve(ctx, ln) }()
	eventually(t, testTimeout, func() bool { return len(e.logs.Find("accept failed")) == 2 }, "both accept errors are logged")
	select {
	case <-done:
		t.Fatal("Serve returned on an accept error")
	default:
	}
	logged := e.logs.Find("accept failed")
	assert.Equal(t, slog.LevelWarn, logged[0].Level)
	assert.Equal(t, "5ms", logged[0].Attrs["backoff"])
	assert.Equal(t, "10ms", logged[1].Attrs["backoff"], "the backoff doubles")
	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(testTimeout):
		t.Fatal("Serve did not return after cancel")
	}
}

// TestServeAcceptBackoffWatchesContext cancels Serve while it backs off
// after an accept error.
func TestServeAcceptBackoffWatchesContext(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	errs := make([]error, 20) // enough to reach a long backoff
	for i := range errs {
		errs[i] = errors.New("transient")
	}
	ln := newFakeListener("127.0.0.1:9", errs...)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.srv.Serve(ctx, ln) }()
	eventually(t, testTimeout, func() bool { return len(e.logs.Find("accept failed")) >= 5 }, "backing off")
	start := time.Now()
	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(testTimeout):
		t.Fatal("Serve did not return after cancel")
	}
	assert.Less(t, time.Since(start), 900*time.Millisecond, "the backoff wait watches ctx")
}

// TestExpiryTicker runs the expiry step on the real clock: a member that
// joined with a 10 ms session and never heartbeats is removed.
func TestExpiryTicker(t *testing.T) {
	t.Parallel()
	e := newEnvWith(t, envOptions{realClock: true, config: func(cfg *Config) { cfg.ExpiryInterval = 5 * time.Millisecond }})
	e.serve()
	req := joinRequest(3, "g", "", "orders")
	req.SessionTimeoutMillis = 10
	resp := e.srv.handleJoinGroup(e.req("c", 3), req).(*kmsg.JoinGroupResponse)
	require.Zero(t, resp.ErrorCode)
	require.Equal(t, "c-000001", resp.MemberID)

	describe := func() kmsg.DescribeGroupsResponseGroup {
		d := kmsg.NewPtrDescribeGroupsRequest()
		d.Version, d.Groups = 5, []string{"g"}
		return e.srv.handleDescribeGroups(e.req("c", 5), d).(*kmsg.DescribeGroupsResponse).Groups[0]
	}
	eventually(t, 5*time.Second, func() bool { return len(describe().Members) == 0 }, "the member expires")
	g := describe()
	assert.Equal(t, "Empty", g.State, "the group stays, Empty")
	view, _ := e.coord.Describe("g")
	assert.Equal(t, int32(2), view.Generation, "expiry is one rebalance")
	eventually(t, testTimeout, func() bool { return len(e.logs.Find("member expired")) == 1 }, "the expiry is logged")
	logged := e.logs.Find("member expired")[0]
	assert.Equal(t, "c-000001", logged.Attrs["member"])
	assert.Equal(t, "g", logged.Attrs["group"])
}

// TestExpiryOnlyWithInterval: without ExpiryInterval (the manual clock's
// setting) nothing expires on its own, however much time passes.
func TestExpiryOnlyWithInterval(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.serve()
	e.join("c", "g", "", "orders")
	_, err := e.clock.Advance(time.Hour)
	require.NoError(t, err)
	view, _ := e.coord.Describe("g")
	assert.Len(t, view.Members, 1, "no ticker runs the expiry step")
	assert.Equal(t, []coordinator.Expired{{Group: "g", MemberID: "c-000001"}}, e.coord.Expire(), "an explicit step does")
}

func TestAdvertise(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		advertise string
		wantHost  string
		wantPort  func(bound string) int32
	}{
		{"configured", "broker.example:19092", "broker.example", func(string) int32 { return 19092 }},
		{"default is the bound address", "", "127.0.0.1", func(bound string) int32 {
			_, port, err := splitHostPort(bound)
			require.NoError(t, err)
			return port
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnvWith(t, envOptions{config: func(cfg *Config) { cfg.Advertise = tc.advertise }})
			addr := e.serve()
			c := wiretest.Dial(t, addr, "c")
			wantPort := tc.wantPort(addr)

			md := kmsg.NewPtrMetadataRequest()
			md.Version = 12
			mresp := wiretest.Do[*kmsg.MetadataResponse](t, c, md)
			require.Len(t, mresp.Brokers, 1)
			assert.Equal(t, kmsg.MetadataResponseBroker{NodeID: 0, Host: tc.wantHost, Port: wantPort}, mresp.Brokers[0])

			for _, v := range []int16{0, 3} {
				fc := kmsg.NewPtrFindCoordinatorRequest()
				fc.Version, fc.CoordinatorKey = v, "g"
				fresp := wiretest.Do[*kmsg.FindCoordinatorResponse](t, c, fc)
				assert.Equal(t, tc.wantHost, fresp.Host, "v%d", v)
				assert.Equal(t, wantPort, fresp.Port, "v%d", v)
			}
			fc := kmsg.NewPtrFindCoordinatorRequest()
			fc.Version, fc.CoordinatorKeys = 6, []string{"g"}
			fresp := wiretest.Do[*kmsg.FindCoordinatorResponse](t, c, fc)
			require.Len(t, fresp.Coordinators, 1)
			assert.Equal(t, tc.wantHost, fresp.Coordinators[0].Host)
			assert.Equal(t, wantPort, fresp.Coordinators[0].Port)
		})
	}
}

// TestMaxConnectionsRefusesAndLogs: with MaxConnections served, a new
// connection is closed at once without an answer and logged at Warn, at
// most once a second however many are refused; the served ones are not
// disturbed, and once one closes a new connection is served again.
func TestMaxConnectionsRefusesAndLogs(t *testing.T) {
	t.Parallel()
	o := &recordingObserver{}
	e := newEnvWith(t, envOptions{config: func(cfg *Config) { cfg.MaxConnections, cfg.Observer = 2, o }})
	addr := e.serve()
	first := wiretest.Dial(t, addr, "first")
	wiretest.Do[*kmsg.ApiVersionsResponse](t, first, apiVersionsRequest(3))
	second := wiretest.Dial(t, addr, "second")
	wiretest.Do[*kmsg.ApiVersionsResponse](t, second, apiVersionsRequest(3))

	const extra = 20
	for range extra {
		c := wiretest.Dial(t, addr, "extra")
		require.NoError(t, c.Send(rawRequest(apiVersionsRequest(3), 1, "extra")))
		wiretest.RequireClosed(t, c)
	}
	refusals := e.logs.Find("too many connections, refusing")
	require.NotEmpty(t, refusals)
	assert.Less(t, len(refusals), extra, "the refusal log is rate-limited")
	assert.Equal(t, slog.LevelWarn, refusals[0].Level)
	assert.Equal(t, "2", refusals[0].Attrs["limit"])
	assert.Equal(t, "1", refusals[0].Attrs["refused"])
	assert.Contains(t, refusals[0].Attrs, "remote")
	assert.Len(t, o.snapshot().opened, 2, "refused connections are never served")

	wiretest.Do[*kmsg.ApiVersionsResponse](t, first, apiVersionsRequest(3))
	require.NoError(t, second.Close())
	eventually(t, testTimeout, func() bool { return len(o.snapshot().closed) == 1 }, "the second connection's goroutine ends")
	third := wiretest.Dial(t, addr, "third")
	assert.Zero(t, wiretest.Do[*kmsg.ApiVersionsResponse](t, third, apiVersionsRequest(3)).ErrorCode, "a freed place is served")
}
