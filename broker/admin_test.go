package broker

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/minibroker/minibroker/coordinator"
	"github.com/minibroker/minibroker/server"
	"github.com/minibroker/minibroker/testkit/wiretest"
)

// stubAdmin is an AdminAPI for this package's tests, which cannot import
// adminapi (it imports broker): its server answers every path with the
// text "stub" until its context is done. adminapi's tests serve the real
// one.
func stubAdmin(coordinator.Clock) (*AdminHooks, error) {
	return &AdminHooks{Start: func(AdminParts) (AdminServer, error) { return stubServer{}, nil }}, nil
}

type stubServer struct{}

func (stubServer) Serve(ctx context.Context, ln net.Listener) error {
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "stub") })}
	stop := context.AfterFunc(ctx, func() { srv.Close() })
	defer stop()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// countingObserver counts the requests the server reports.
type countingObserver struct {
	mu       sync.Mutex
	requests map[int16]int
}

func (o *countingObserver) RequestDone(api, _, _ int16, _ time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.requests[api]++
}
func (o *countingObserver) CommitDone(string, time.Duration, int16) {}
func (o *countingObserver) Fenced(server.FencingEvent)              {}
func (o *countingObserver) Fetched(server.FetchEvent)               {}
func (o *countingObserver) ConnOpened(string)                       {}
func (o *countingObserver) ConnClosed(string)                       {}
func (o *countingObserver) TopicNoticed(server.TopicEvent)          {}
func (o *countingObserver) ConnIdentified(server.ConnInfo)          {}

// TestAdminHooksAreWired: with Config.Admin, Start calls AdminAPI with
// the broker's clock, the hooks hear the server and the coordinator, the
// admin server gets the broker's own parts, and it is served on
// AdminAddr until Close.
func TestAdminHooksAreWired(t *testing.T) {
	t.Parallel()
	obs := &countingObserver{requests: map[int16]int{}}
	var mu sync.Mutex
	var rebalances []coordinator.Rebalance
	var gotClock coordinator.Clock
	var parts AdminParts
	api := func(clock coordinator.Clock) (*AdminHooks, error) {
		gotClock = clock
		return &AdminHooks{
			Observer: obs,
			OnRebalance: func(r coordinator.Rebalance) {
				mu.Lock()
				defer mu.Unlock()
				rebalances = append(rebalances, r)
			},
			Start: func(p AdminParts) (AdminServer, error) {
				parts = p
				return stubServer{}, nil
			},
		}, nil
	}
	b := start(t, Config{ManualClock: true, Admin: "127.0.0.1:0", AdminAPI: api, AdminToken: "secret", Topics: map[string]int32{"orders": 4}})
	require.Same(t, b.manual, gotClock)
	require.Same(t, b.Coordinator(), parts.Coordinator)
	require.Same(t, b.Catalog(), parts.Catalog)
	require.Same(t, b.Log(), parts.Log)
	require.Same(t, b.Transactions(), parts.Transactions)
	require.Same(t, b.faults, parts.Faults)
	require.Equal(t, "secret", parts.Token)
	require.NotNil(t, parts.MemoryStats)
	require.Equal(t, b.store.Stats(), parts.OffsetStats())

	c := wiretest.Dial(t, b.Addr(), "test")
	j := join(t, c, "g", "orders")
	mu.Lock()
	require.Len(t, rebalances, 1)
	require.Equal(t, j.Generation, rebalances[0].Generation)
	mu.Unlock()
	obs.mu.Lock()
	require.Equal(t, 1, obs.requests[11], "the JoinGroup is reported")
	obs.mu.Unlock()

	resp, err := http.Get("http://" + b.AdminAddr() + "/")
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	require.Equal(t, "stub", string(body))
}

// TestAdminAPIErrorsStopStart: an AdminAPI that fails, or whose server
// cannot be made, fails Start with its error, naming the admin side.
func TestAdminAPIErrorsStopStart(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	for name, api := range map[string]AdminAPI{
		"hooks": func(coordinator.Clock) (*AdminHooks, error) { return nil, boom },
		"server": func(coordinator.Clock) (*AdminHooks, error) {
			return &AdminHooks{Start: func(AdminParts) (AdminServer, error) { return nil, boom }}, nil
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b, err := Start(t.Context(), Config{Admin: "127.0.0.1:0", AdminAPI: api})
			require.ErrorIs(t, err, boom)
			require.EqualError(t, err, "admin: boom")
			require.Nil(t, b)
		})
	}
}
