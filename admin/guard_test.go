package admin

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/minibroker/minibroker/internal/testutil"
)

// TestGuardRefusesOtherOrigins: what a web page from another origin can
// send — a form post, a no-cors fetch, a request through a rebound DNS
// name — changes nothing and reads nothing.
func TestGuardRefusesOtherOrigins(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		method  string
		path    string
		host    string
		headers map[string]string
		code    int
	}{
		{"form post", "POST", "/v1/expire", "127.0.0.1:19644",
			map[string]string{"Content-Type": "application/x-www-form-urlencoded", "Origin": "http://evil.example"}, http.StatusUnsupportedMediaType},
		{"no-cors text post", "POST", "/v1/clock/advance", "127.0.0.1:19644",
			map[string]string{"Content-Type": "text/plain", "Origin": "http://localhost:8000"}, http.StatusUnsupportedMediaType},
		{"no content type", "POST", "/v1/expire", "127.0.0.1:19644", nil, http.StatusUnsupportedMediaType},
		{"json from another origin", "POST", "/v1/expire", "127.0.0.1:19644",
			map[string]string{"Content-Type": "application/json", "Origin": "http://127.0.0.1:8000"}, http.StatusForbidden},
		{"json from a null origin", "POST", "/v1/expire", "127.0.0.1:19644",
			map[string]string{"Content-Type": "application/json", "Origin": "null"}, http.StatusForbidden},
		{"rebound name reads", "GET", "/v1/groups", "evil.example:9644", nil, http.StatusForbidden},
		{"rebound name posts", "POST", "/v1/expire", "evil.example:9644",
			map[string]string{"Content-Type": "application/json", "Origin": "http://evil.example:9644"}, http.StatusForbidden},
		{"rebound name reads the page", "GET", "/", "evil.example", nil, http.StatusForbidden},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			r := httptest.NewRequest(tc.method, tc.path, strings.NewReader(`{"ms":600000}`))
			r.Host = tc.host
			for k, v := range tc.headers {
				r.Header.Set(k, v)
			}
			rec := httptest.NewRecorder()
			f.srv.Handler().ServeHTTP(rec, r)
			require.Equal(t, tc.code, rec.Code, rec.Body.String())
			require.Contains(t, rec.Body.String(), `"error"`)
			require.Equal(t, int64(0), f.clock.Now().UnixMilli(), "the clock did not move")
			require.Equal(t, []testutil.Record{{Level: slog.LevelInfo, Message: "admin request refused", Attrs: map[string]string{
				"status": strconv.Itoa(tc.code), "method": tc.method, "path": tc.path, "host": tc.host, "origin": tc.headers["Origin"],
			}}}, f.logs.Find("admin request refused"))
		})
	}
}

// TestGuardAllowsTheAPIsOwnClients: curl (no Origin) and the page itself
// (same origin), on any loopback name.
func TestGuardAllowsTheAPIsOwnClients(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	for _, host := range []string{"127.0.0.1:19644", "localhost:19644", "[::1]:19644", "127.0.0.2", "app.localhost:19644"} {
		for _, origin := range []string{"", "http://" + host} {
			r := httptest.NewRequest("POST", "/v1/clock/advance", strings.NewReader(`{"ms":1}`))
			r.Host = host
			r.Header.Set("Content-Type", "application/json; charset=utf-8")
			if origin != "" {
				r.Header.Set("Origin", origin)
			}
			rec := httptest.NewRecorder()
			f.srv.Handler().ServeHTTP(rec, r)
			require.Equal(t, http.StatusOK, rec.Code, "host %s origin %q: %s", host, origin, rec.Body.String())
		}
	}
	require.Equal(t, int64(10), f.clock.Now().UnixMilli())
}

// TestGuardToken: with a token every API request needs it, whatever its
// Host; the page is served without it.
func TestGuardToken(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	srv, err := New(Config{Coordinator: f.coord, Catalog: f.catalog, Recorder: f.rec, Clock: f.clock, Token: "s3cret"})
	require.NoError(t, err)
	get := func(path, auth string) int {
		r := httptest.NewRequest("GET", path, nil)
		r.Host = "broker.example:9644"
		if auth != "" {
			r.Header.Set("Authorization", auth)
		}
		rec := httptest.NewRecorder()
		srv.Handler().ServeHTTP(rec, r)
		return rec.Code
	}
	require.Equal(t, http.StatusUnauthorized, get("/v1/groups", ""))
	require.Equal(t, http.StatusUnauthorized, get("/v1/groups", "Bearer wrong"))
	require.Equal(t, http.StatusUnauthorized, get("/metrics", "s3cret"))
	require.Equal(t, http.StatusOK, get("/v1/groups", "Bearer s3cret"))
	require.Equal(t, http.StatusOK, get("/", ""))
}

// TestServeNeedsATokenOffLoopback: an API on a non-loopback address
// without a token is refused before it serves anything.
func TestServeNeedsATokenOffLoopback(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ln, err := net.Listen("tcp", "0.0.0.0:0")
	require.NoError(t, err)
	err = f.srv.Serve(t.Context(), ln)
	require.ErrorContains(t, err, "needs a token")
	_, err = ln.Accept()
	require.Error(t, err, "the listener was closed")
}

// TestServeLimits: the connection cap is set, and a connection beyond it
// takes the slot of the one that has waited longest for a request: two
// idle connections hold both slots, a GET is answered all the same, and
// the older idle connection is closed.
func TestServeLimits(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	srv, err := New(Config{Coordinator: f.coord, Catalog: f.catalog, Recorder: f.rec, Clock: f.clock, MaxConnections: 2})
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
	addr := ln.Addr().String()
	// Two idle connections take both slots.
	var idle []net.Conn
	for range 2 {
		c, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		t.Cleanup(func() { c.Close() })
		idle = append(idle, c)
	}
	client := &http.Client{Timeout: 10 * time.Second}
	resp, err := client.Get("http://" + addr + "/v1/groups")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, "served though idle connections held both slots")
	require.NoError(t, idle[0].SetReadDeadline(time.Now().Add(10*time.Second)))
	_, err = idle[0].Read(make([]byte, 1))
	require.ErrorIs(t, err, io.EOF, "the connection that waited longest gave up its slot")
}
