package server

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/internal/testutil"
	"github.com/minibroker/minibroker/testkit/wiretest"
)

// TestHandlerPanicClosesOnlyThatConnection replaces the Heartbeat handler
// with one that panics: the connection that sent it is closed without an
// answer, the panic is logged at Error with its stack, and another
// connection keeps being served, Heartbeat included once restored.
func TestHandlerPanicClosesOnlyThatConnection(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var armed atomic.Bool
	armed.Store(true)
	real := e.srv.handlers[kmsg.Heartbeat]
	e.srv.handlers[kmsg.Heartbeat].handle = func(s *Server, r *request, req kmsg.Request) kmsg.Response {
		if armed.Load() {
			panic("broken invariant")
		}
		return real.handle(s, r, req)
	}
	addr := e.serve()
	bystander := wiretest.Dial(t, addr, "bystander")
	wiretest.Do[*kmsg.ApiVersionsResponse](t, bystander, apiVersionsRequest(4))

	victim := wiretest.Dial(t, addr, "victim")
	require.NoError(t, victim.Send(rawRequest(wiretest.HeartbeatRequest(4, "g", "m", 1), 0, "victim")))
	wiretest.RequireClosed(t, victim)

	eventually(t, testTimeout, func() bool { return len(e.logs.Find("handler panic, closing connection")) == 1 },
		"the panic is logged")
	logged := e.logs.Find("handler panic, closing connection")[0]
	assert.Equal(t, slog.LevelError, logged.Level)
	assert.Equal(t, "broken invariant", logged.Attrs["err"])
	assert.Contains(t, logged.Attrs["stack"], "conn_test.go", "the stack names the panicking code")
	assert.Contains(t, logged.Attrs, "remote")

	resp := wiretest.Do[*kmsg.ApiVersionsResponse](t, bystander, apiVersionsRequest(4))
	assert.Zero(t, resp.ErrorCode)
	armed.Store(false)
	hb := wiretest.Do[*kmsg.HeartbeatResponse](t, bystander, wiretest.HeartbeatRequest(4, "g", "m", 1))
	assert.Equal(t, kerr.UnknownMemberID.Code, hb.ErrorCode)
}

// countingListener wraps accepted connections to count Write calls.
type countingListener struct {
	net.Listener
	writes atomic.Int64
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &countingConn{Conn: c, writes: &l.writes}, nil
}

type countingConn struct {
	net.Conn
	writes *atomic.Int64
}

func (c *countingConn) Write(b []byte) (int, error) {
	c.writes.Add(1)
	return c.Conn.Write(b)
}

// TestPipelinedRequestsAnsweredInOrderWithCoalescedWrites sends 60
// requests in one write: the answers come back in request order (the
// client checks each correlation id), and requests that arrived together
// share writes instead of costing one write each.
func TestPipelinedRequestsAnsweredInOrderWithCoalescedWrites(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ln := &countingListener{Listener: inner}
	addr := e.serveOn(ln)
	join := e.join("c", "g", "", "orders")

	c := wiretest.Dial(t, addr, "c")
	var reqs []kmsg.Request
	for i := range 60 {
		switch i % 3 {
		case 0:
			reqs = append(reqs, wiretest.HeartbeatRequest(int16(i%5), "g", join.MemberID, join.Generation))
		case 1:
			reqs = append(reqs, wiretest.HeartbeatRequest(4, "g", join.MemberID, join.Generation+int32(i))) // stale: 22
		default:
			reqs = append(reqs, apiVersionsRequest(int16(i%5)))
		}
	}
	resps, err := c.Pipeline(t.Context(), reqs)
	require.NoError(t, err)
	require.Len(t, resps, len(reqs))
	for i, resp := range resps {
		require.Equal(t, reqs[i].Key(), resp.Key(), "response %d", i)
		require.Equal(t, reqs[i].GetVersion(), resp.GetVersion(), "response %d", i)
		switch i % 3 {
		case 0:
			assert.Zero(t, resp.(*kmsg.HeartbeatResponse).ErrorCode, "response %d", i)
		case 1:
			assert.Equal(t, kerr.IllegalGeneration.Code, resp.(*kmsg.HeartbeatResponse).ErrorCode, "response %d", i)
		default:
			assert.Zero(t, resp.(*kmsg.ApiVersionsResponse).ErrorCode, "response %d", i)
		}
	}
	assert.Less(t, ln.writes.Load(), int64(len(reqs)/4), "pipelined answers share writes")
}

// TestPartialFrameDoesNotHoldBackAnswers sends a request followed by the
// first bytes of the next in one write. The answer to the first must go
// out while the server waits for the rest of the second: a client may wait
// for it before finishing the next frame.
func TestPartialFrameDoesNotHoldBackAnswers(t *testing.T) {
	t.Parallel()
	for _, cut := range []int{2, 4, 9} { // inside the size, right after it, inside the header
		t.Run(fmt.Sprintf("cut at %d", cut), func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			c := wiretest.Dial(t, e.serve(), "c")
			first := rawRequest(apiVersionsRequest(3), 7, "c")
			second := rawRequest(wiretest.HeartbeatRequest(3, "g", "m", 1), 8, "c")
			require.NoError(t, c.Send(append(first, second[:cut]...)))

			require.NoError(t, c.SetDeadline(time.Now().Add(testTimeout)))
			frame, err := c.ReadFrame()
			require.NoError(t, err, "the first answer must not wait for the second request")
			assert.Equal(t, int32(7), int32(binary.BigEndian.Uint32(frame)))

			require.NoError(t, c.Send(second[cut:]))
			frame, err = c.ReadFrame()
			require.NoError(t, err)
			assert.Equal(t, []byte{0, 0, 0, 8, 0, 0, 0, 0, 0, 25}, frame, "corr 8, throttle 0, UNKNOWN_MEMBER_ID")
		})
	}
}

// TestCloseFlushesEarlierAnswers pipelines a good request and a bad one:
// the good one is answered before the connection closes.
func TestCloseFlushesEarlierAnswers(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := wiretest.Dial(t, e.serve(), "c")
	raw := append(rawRequest(apiVersionsRequest(0), 1, "c"), rawHeader(9999, 0, 2, nil)...)
	require.NoError(t, c.Send(raw))
	require.NoError(t, c.SetDeadline(time.Now().Add(testTimeout)))
	frame, err := c.ReadFrame()
	require.NoError(t, err)
	assert.Equal(t, int32(1), int32(binary.BigEndian.Uint32(frame)))
	wiretest.RequireClosed(t, c)
}

// TestUnsupportedApiVersionsKeepsConnection: KIP-511's v0 error answer on
// a v0 response header, without reading the body, then normal service.
func TestUnsupportedApiVersionsKeepsConnection(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := wiretest.Dial(t, e.serve(), "c")
	// A v99 body we could not parse: the server must not try.
	require.NoError(t, c.Send(rawHeader(18, 99, 5, []byte{0xff})))
	require.NoError(t, c.SetDeadline(time.Now().Add(testTimeout)))
	frame, err := c.ReadFrame()
	require.NoError(t, err)
	want := kbin.AppendInt32(nil, 5) // header v0: no tag byte
	want = append(want, 0, 35)       // UNSUPPORTED_VERSION
	want = kbin.AppendInt32(want, 1) // one key
	want = append(want, 0, 18, 0, 0, 0, 4)
	assert.Equal(t, want, frame)

	resp := wiretest.Do[*kmsg.ApiVersionsResponse](t, c, apiVersionsRequest(3))
	assert.Zero(t, resp.ErrorCode)
}

// TestNullClientIDJoinsAsMember: a header with a null client id gives ids
// prefixed "member".
func TestNullClientIDJoinsAsMember(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := wiretest.Dial(t, e.serve(), "unused")
	body := joinRequest(3, "g", "", "orders").AppendTo(nil)
	require.NoError(t, c.Send(rawHeader(11, 3, 1, body)))
	require.NoError(t, c.SetDeadline(time.Now().Add(testTimeout)))
	frame, err := c.ReadFrame()
	require.NoError(t, err)
	resp := kmsg.NewPtrJoinGroupResponse()
	resp.Version = 3
	require.NoError(t, resp.ReadFrom(frame[4:]))
	assert.Zero(t, resp.ErrorCode)
	assert.Equal(t, "member-000001", resp.MemberID)
}

// TestConnectionsAreIndependent runs clients concurrently, each on its own
// group, while another connection misbehaves.
func TestConnectionsAreIndependent(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	addr := e.serve()
	var wg sync.WaitGroup
	for i := range 4 {
		c := wiretest.Dial(t, addr, "c")
		wg.Go(func() { // no require here: not the test goroutine
			group := fmt.Sprintf("g%d", i)
			resp, err := c.Request(t.Context(), joinRequest(3, group, "", "orders"))
			if !assert.NoError(t, err) {
				return
			}
			join := resp.(*kmsg.JoinGroupResponse)
			for range 20 {
				resp, err := c.Request(t.Context(), wiretest.HeartbeatRequest(3, group, join.MemberID, join.Generation))
				if !assert.NoError(t, err) {
					return
				}
				assert.Zero(t, resp.(*kmsg.HeartbeatResponse).ErrorCode)
			}
		})
	}
	bad := wiretest.Dial(t, addr, "bad")
	require.NoError(t, bad.Send(bytes.Repeat([]byte{0xff}, 4)))
	wiretest.RequireClosed(t, bad)
	wg.Wait()
}

// TestPeerVanishingMidFrameIsNotAWarning: a client that closes inside a
// frame is logged at Debug only; it broke nothing of ours.
func TestPeerVanishingMidFrameIsNotAWarning(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := wiretest.Dial(t, e.serve(), "c")
	require.NoError(t, c.Send([]byte{0, 0, 0, 50, 0, 18}))
	require.NoError(t, c.Close())
	eventually(t, testTimeout, func() bool { return len(e.logs.Find("read failed")) == 1 }, "the short read is logged")
	assert.Equal(t, slog.LevelDebug, e.logs.Find("read failed")[0].Level)
	assert.Empty(t, e.logs.AtLevel(slog.LevelWarn))
}

// TestAnswersDoNotWaitForAFetch pipelines a request and a long Fetch: the
// first answer goes out at once, not when the Fetch's wait ends.
func TestAnswersDoNotWaitForAFetch(t *testing.T) {
	t.Parallel()
	e := newEnvWith(t, envOptions{config: func(cfg *Config) { cfg.MaxFetchWait = time.Minute }})
	c := wiretest.Dial(t, e.serve(), "c")
	fetch := kmsg.NewPtrFetchRequest()
	fetch.Version, fetch.MaxWaitMillis = 12, int32(time.Minute/time.Millisecond)
	fetch.Topics = []kmsg.FetchRequestTopic{{Topic: "orders", Partitions: []kmsg.FetchRequestTopicPartition{{Partition: 0}}}}
	require.NoError(t, c.Send(append(rawRequest(apiVersionsRequest(3), 1, "c"), rawRequest(fetch, 2, "c")...)))
	require.NoError(t, c.SetDeadline(time.Now().Add(testTimeout)))
	frame, err := c.ReadFrame()
	require.NoError(t, err, "the ApiVersions answer must not wait for the Fetch")
	assert.Equal(t, int32(1), int32(binary.BigEndian.Uint32(frame)))
}

// TestIdleConnectionIsClosed: a connection that starts no request for
// IdleTimeout is closed (Kafka's connections.max.idle.ms), logged at Debug
// as Kafka does; one that is being answered all that time (a long poll:
// time spent answering is not idle) stays open and is served after.
func TestIdleConnectionIsClosed(t *testing.T) {
	t.Parallel()
	const idle = 400 * time.Millisecond
	e := newEnvWith(t, envOptions{config: func(cfg *Config) { cfg.IdleTimeout = idle }})
	addr := e.serve()
	quiet := wiretest.Dial(t, addr, "quiet")
	// Taken before the last request: the server starts the idle wait after
	// answering it, so the close can come no sooner than idle after this.
	quietSince := time.Now()
	wiretest.Do[*kmsg.ApiVersionsResponse](t, quiet, apiVersionsRequest(3))
	busy := wiretest.Dial(t, addr, "busy")

	closed := make(chan time.Time, 1)
	go func() { // owns quiet's reads from here on
		_ = quiet.SetDeadline(time.Now().Add(testTimeout))
		_, _ = quiet.ReadFrame()
		closed <- time.Now()
	}()
	// busy spends the whole test inside one request: a long poll on an
	// empty partition, which must not count as idle however slowly the
	// test is scheduled. (Pinging every idle/4 instead made the test's
	// outcome depend on the scheduler under a loaded race run.)
	fetchStart := time.Now()
	fetched := wiretest.Do[*kmsg.FetchResponse](t, busy, fetchRequest(12, 3*idle, "orders", 0, 0))
	assert.GreaterOrEqual(t, time.Since(fetchStart), 3*idle, "the fetch waited its MaxWait")
	assert.Zero(t, fetched.Topics[0].Partitions[0].ErrorCode)
	select {
	case at := <-closed:
		assert.GreaterOrEqual(t, at.Sub(quietSince), idle, "not closed before the idle timeout")
	case <-time.After(testTimeout):
		t.Fatal("the idle connection was not closed")
	}
	resp := wiretest.Do[*kmsg.ApiVersionsResponse](t, busy, apiVersionsRequest(3))
	assert.Zero(t, resp.ErrorCode, "the busy connection is still served")

	eventually(t, testTimeout, func() bool { return len(e.logs.Find("closing idle connection")) == 1 }, "the close is logged")
	logged := e.logs.Find("closing idle connection")[0]
	assert.Equal(t, slog.LevelDebug, logged.Level)
	assert.Contains(t, logged.Attrs["err"], "no request for 400ms")
	assert.Empty(t, e.logs.AtLevel(slog.LevelWarn))
}

// TestPartialFrameIsClosedAfterFrameReadTimeout: once a frame has started
// it must be whole within FrameReadTimeout, however the peer stalls: after
// a few bytes, after part of the size, or while trickling a byte at a time
// more often than any idle timer. The peer is closed and logged at Warn,
// and a bystander is served throughout.
func TestPartialFrameIsClosedAfterFrameReadTimeout(t *testing.T) {
	t.Parallel()
	const frameTimeout = 300 * time.Millisecond
	hb := rawRequest(wiretest.HeartbeatRequest(4, "g", "m", 1), 1, "c")
	tests := []struct {
		name    string
		first   []byte
		trickle bool
	}{
		{"silent inside the size", hb[:2], false},
		{"silent inside the header", hb[:9], false},
		{"silent before the last byte", hb[:len(hb)-1], false},
		{"a large frame announced, silent", []byte{0, 1, 0, 0, 0, 12}, false},
		{"trickling a byte every 20ms", hb[:5], true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnvWith(t, envOptions{config: func(cfg *Config) {
				cfg.FrameReadTimeout, cfg.IdleTimeout = frameTimeout, time.Minute
			}})
			addr := e.serve()
			bystander := wiretest.Dial(t, addr, "bystander")
			c := wiretest.Dial(t, addr, "slow")
			start := time.Now()
			require.NoError(t, c.Send(tc.first))
			stop := make(chan struct{})
			defer close(stop)
			if tc.trickle {
				go func() { // writes only; the test goroutine reads
					tick := time.NewTicker(20 * time.Millisecond)
					defer tick.Stop()
					for i := 0; ; i++ {
						select {
						case <-stop:
							return
						case <-tick.C:
						}
						if c.Send([]byte{0}) != nil {
							return
						}
					}
				}()
			}
			wiretest.Do[*kmsg.ApiVersionsResponse](t, bystander, apiVersionsRequest(3))
			wiretest.RequireClosed(t, c)
			elapsed := time.Since(start)
			assert.GreaterOrEqual(t, elapsed, frameTimeout)
			assert.Less(t, elapsed, time.Minute/2, "closed by the frame timeout, not the idle timeout")
			wiretest.Do[*kmsg.ApiVersionsResponse](t, bystander, apiVersionsRequest(3))

			eventually(t, testTimeout, func() bool { return len(e.logs.Find("closing connection")) == 1 }, "the close is logged")
			logged := e.logs.Find("closing connection")[0]
			assert.Equal(t, slog.LevelWarn, logged.Level)
			assert.Contains(t, logged.Attrs["err"], "request frame not completed in time: not whole within 300ms")
		})
	}
}

// smallBufferListener shrinks the send buffer of accepted connections, so
// that a peer that stops reading blocks our writes quickly.
type smallBufferListener struct{ net.Listener }

func (l smallBufferListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetWriteBuffer(4 << 10)
	}
	return c, err
}

// TestUnreadAnswersCloseTheConnection: a client that sends requests but
// never reads the answers blocks our write; after FrameReadTimeout the
// connection is closed and logged at Warn, so it holds no goroutine.
func TestUnreadAnswersCloseTheConnection(t *testing.T) {
	t.Parallel()
	o := &recordingObserver{}
	e := newEnvWith(t, envOptions{config: func(cfg *Config) {
		cfg.FrameReadTimeout, cfg.Observer = 200*time.Millisecond, o
	}})
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := e.serveOn(smallBufferListener{inner})

	conn, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer conn.Close()
	require.NoError(t, conn.(*net.TCPConn).SetReadBuffer(4<<10))
	var reqs []byte
	for i := range 2000 {
		reqs = append(reqs, rawRequest(metadataRequest(12, nil), int32(i), "c")...)
	}
	go func() { _, _ = conn.Write(reqs) }() // may block once we stop answering; ends when the conn closes

	eventually(t, testTimeout, func() bool { return len(e.logs.Find("closing connection")) == 1 }, "the stuck write is given up")
	logged := e.logs.Find("closing connection")[0]
	assert.Equal(t, slog.LevelWarn, logged.Level)
	assert.Contains(t, logged.Attrs["err"], "answer not read within 200ms")
	eventually(t, testTimeout, func() bool { s := o.snapshot(); return len(s.opened) == 1 && len(s.closed) == 1 }, "the connection's goroutine ends")
}

// TestTLS: with Config.TLS every connection speaks TLS. A client that
// trusts our CA is served; a plaintext client, a client that sends no
// handshake within FrameReadTimeout, and (with client authentication
// required) a client without a certificate are closed and logged at Warn;
// a peer that connects and leaves without a byte only at Debug.
func TestTLS(t *testing.T) {
	t.Parallel()
	pki := testutil.NewPKI(t)
	serveTLS := func(t *testing.T, requireClientCert bool) (*env, string) {
		cfg := pki.ServerConfig(requireClientCert)
		e := newEnvWith(t, envOptions{config: func(c *Config) { c.TLS, c.FrameReadTimeout = cfg, 300*time.Millisecond }})
		return e, e.serve()
	}
	handshakeWarnings := func(e *env) int { return len(e.logs.Find("tls handshake failed, closing connection")) }

	t.Run("trusted client is served", func(t *testing.T) {
		t.Parallel()
		e, addr := serveTLS(t, false)
		c, err := dialTLS(t, addr, pki, false)
		require.NoError(t, err)
		join := wiretest.Do[*kmsg.JoinGroupResponse](t, c, joinRequest(3, "g", "", "orders"))
		assert.Zero(t, join.ErrorCode)
		assert.Equal(t, "tls-000001", join.MemberID)
		hb := wiretest.Do[*kmsg.HeartbeatResponse](t, c, wiretest.HeartbeatRequest(4, "g", join.MemberID, join.Generation))
		assert.Zero(t, hb.ErrorCode)
		assert.Zero(t, handshakeWarnings(e))
	})
	t.Run("plaintext client is closed", func(t *testing.T) {
		t.Parallel()
		e, addr := serveTLS(t, false)
		c := wiretest.Dial(t, addr, "plain")
		require.NoError(t, c.Send(rawRequest(apiVersionsRequest(3), 1, "plain")))
		wiretest.RequireClosed(t, c)
		eventually(t, testTimeout, func() bool { return handshakeWarnings(e) == 1 }, "the failed handshake is logged")
		assert.Contains(t, e.logs.Find("tls handshake failed, closing connection")[0].Attrs["err"], "does not look like a TLS handshake")
	})
	t.Run("silent client is closed after FrameReadTimeout", func(t *testing.T) {
		t.Parallel()
		e, addr := serveTLS(t, false)
		// The server's timer starts when it accepts, which may be before
		// the client's dial returns: time from before the dial.
		start := time.Now()
		c := wiretest.Dial(t, addr, "silent")
		wiretest.RequireClosed(t, c)
		assert.GreaterOrEqual(t, time.Since(start), 300*time.Millisecond)
		eventually(t, testTimeout, func() bool { return handshakeWarnings(e) == 1 }, "the stalled handshake is logged")
	})
	t.Run("client that leaves at once is not a warning", func(t *testing.T) {
		t.Parallel()
		e, addr := serveTLS(t, false)
		conn, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		require.NoError(t, conn.Close())
		eventually(t, testTimeout, func() bool { return len(e.logs.Find("connection closed before the tls handshake")) == 1 }, "logged at Debug")
		assert.Zero(t, handshakeWarnings(e))
	})
	t.Run("client certificate required", func(t *testing.T) {
		t.Parallel()
		e, addr := serveTLS(t, true)
		c, err := dialTLS(t, addr, pki, true)
		require.NoError(t, err)
		assert.Zero(t, wiretest.Do[*kmsg.ApiVersionsResponse](t, c, apiVersionsRequest(3)).ErrorCode)

		// Without a certificate the server refuses the handshake; with TLS
		// 1.3 the client learns it at its first read.
		anon, err := dialTLS(t, addr, pki, false)
		if err == nil {
			_, err = anon.Request(t.Context(), apiVersionsRequest(3))
		}
		require.Error(t, err)
		eventually(t, testTimeout, func() bool { return handshakeWarnings(e) == 1 }, "the refused client is logged")
		assert.Contains(t, e.logs.Find("tls handshake failed, closing connection")[0].Attrs["err"], "certificate")
	})
}
