package admin

import (
	"context"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	for _, tc := range []struct {
		name string
		cfg  Config
		ok   bool
	}{
		{"no coordinator", Config{Catalog: f.catalog, Recorder: f.rec}, false},
		{"no catalog", Config{Coordinator: f.coord, Recorder: f.rec}, false},
		{"no recorder", Config{Coordinator: f.coord, Catalog: f.catalog}, false},
		{"defaults", Config{Coordinator: f.coord, Catalog: f.catalog, Recorder: f.rec}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := New(tc.cfg)
			if !tc.ok {
				require.Error(t, err)
				require.Nil(t, s)
				return
			}
			require.NoError(t, err)
			require.Equal(t, "real", s.clockKind())
		})
	}
}

// TestServe serves on a loopback port until the context ends, then
// returns nil with the port closed.
func TestServe(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.srv.Serve(ctx, ln) }()

	url := "http://" + ln.Addr().String()
	resp, err := http.Get(url + "/v1/groups")
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "application/json", resp.Header.Get("Content-Type"))
	require.JSONEq(t, `{"now":"1970-01-01T00:00:00Z","now_ms":0,"clock":"manual","groups":[]}`, string(body))

	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return after its context ended")
	}
	_, err = net.Dial("tcp", ln.Addr().String())
	require.Error(t, err, "the listener is closed")
}

// TestServeListenerFails: an unusable listener is an error at once.
func TestServeListenerFails(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ln.Close()
	require.Error(t, f.srv.Serve(context.Background(), ln))
}

func TestNewRecorder(t *testing.T) {
	t.Parallel()
	_, err := NewRecorder(RecorderConfig{MaxRebalances: -1})
	require.ErrorContains(t, err, "must not be negative")
	_, err = NewRecorder(RecorderConfig{MaxFencing: -1})
	require.ErrorContains(t, err, "must not be negative")
	r, err := NewRecorder(RecorderConfig{})
	require.NoError(t, err)
	require.Equal(t, DefaultMaxRebalances, r.rebalances.max)
	require.Equal(t, DefaultMaxFencing, r.fencing.max)
	require.NotNil(t, r.Metrics())
}
