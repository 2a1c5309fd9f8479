package main

import (
	"bytes"
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/minibroker/minibroker/clock"
	"github.com/minibroker/minibroker/coordinator"
	"github.com/minibroker/minibroker/offsets"
	"github.com/minibroker/minibroker/server"
)

// startBroker starts minibroker as make run does (topics orders:4 and
// payments:1, the real clock, the expiry ticker) on a loopback port.
func startBroker(t *testing.T) string {
	t.Helper()
	store, err := offsets.Open(offsets.Config{Dir: t.TempDir()})
	require.NoError(t, err)
	coord, err := coordinator.New(coordinator.Config{
		Clock: clock.System{}, Store: store, Topics: map[string]int32{"orders": 4, "payments": 1},
	})
	require.NoError(t, err)
	srv, err := server.New(server.Config{Coordinator: coord, ExpiryInterval: 100 * time.Millisecond})
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-served)
		require.NoError(t, store.Close())
	})
	return ln.Addr().String()
}

// TestKgoThreeConsumersSettles runs the demo against an in-process broker: it settles
// with three members, then two, then one, on exactly the round-robin
// assignments the package comment promises, and every consumer printed its
// assignments.
func TestKgoThreeConsumersSettles(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("the demo pauses between steps")
	}
	addr := startBroker(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out bytes.Buffer
	require.NoError(t, run(ctx, addr, &out))
	t.Log("\n" + out.String())

	var settled, closing []string
	assigned := map[string]bool{}
	for line := range strings.Lines(out.String()) {
		line = strings.TrimSpace(line)
		switch fields := strings.Fields(line); {
		case strings.HasPrefix(line, "settled:"):
			settled = append(settled, line)
		case strings.HasPrefix(line, "closing "):
			closing = append(closing, fields[1])
		case len(fields) > 1 && fields[1] == "assigned":
			assigned[fields[0]] = true
		}
	}
	assert.Equal(t, []string{
		"settled: 3 members: consumer-a=orders[0 3] consumer-b=orders[1] consumer-c=orders[2]",
		"settled: 2 members: consumer-b=orders[0 2] consumer-c=orders[1 3]",
		"settled: 1 member: consumer-c=orders[0 1 2 3]",
	}, settled)
	assert.Equal(t, []string{"consumer-a", "consumer-b", "consumer-c"}, closing)
	assert.Equal(t, map[string]bool{"consumer-a": true, "consumer-b": true, "consumer-c": true}, assigned)
	assert.True(t, strings.HasSuffix(out.String(), "done\n"))
}

// TestKgoThreeConsumersWithoutTopic fails with a hint when the broker lacks the topic.
func TestKgoThreeConsumersWithoutTopic(t *testing.T) {
	t.Parallel()
	store := offsets.NewMemory()
	coord, err := coordinator.New(coordinator.Config{Clock: clock.System{}, Store: store})
	require.NoError(t, err)
	srv, err := server.New(server.Config{Coordinator: coord})
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

	var out bytes.Buffer
	err = run(context.Background(), ln.Addr().String(), &out)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `topic "orders"`)
	assert.Empty(t, out.String())
}
