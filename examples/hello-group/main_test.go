package main

import (
	"bytes"
	"context"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/minibroker/minibroker/clock"
	"github.com/minibroker/minibroker/coordinator"
	"github.com/minibroker/minibroker/server"
)

func TestHelloGroupPrintsItsAssignment(t *testing.T) {
	t.Parallel()
	coord, err := coordinator.New(coordinator.Config{Clock: clock.System{}, Topics: map[string]int32{"orders": 4, "payments": 1}})
	require.NoError(t, err)
	srv, err := server.New(server.Config{Coordinator: coord, ExpiryInterval: 50 * time.Millisecond, MaxFetchWait: 100 * time.Millisecond})
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-served)
	})

	runCtx, runCancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer runCancel()
	var out bytes.Buffer
	require.NoError(t, run(runCtx, ln.Addr().String(), &out))
	require.Regexp(t, `^member kgo-000001, generation 1: orders \[0 1 2 3\]\n$`, out.String())
}
