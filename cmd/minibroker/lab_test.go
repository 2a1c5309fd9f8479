package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/minibroker/minibroker/broker"
	"github.com/minibroker/minibroker/broker/adminapi"
	labs "github.com/minibroker/minibroker/tools/lab"
)

// TestLabCommandPrintsTheGoldenOutput runs each lab as `make lab` does and
// compares stdout with the golden files tools/lab pins.
func TestLabCommandPrintsTheGoldenOutput(t *testing.T) {
	t.Parallel()
	for _, name := range labs.Names() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var stdout, stderr bytes.Buffer
			require.Equal(t, 0, run(t.Context(), []string{"lab", name}, &stdout, &stderr), stderr.String())
			want, err := os.ReadFile(filepath.Join("..", "..", "tools", "lab", "testdata", name+".golden"))
			require.NoError(t, err)
			require.Equal(t, string(want), stdout.String())
			require.Empty(t, stderr.String())
		})
	}
}

func TestLabCommandUsageErrors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no lab", nil, 2, "usage: minibroker lab"},
		{"unknown lab", []string{"nope"}, 2, `unknown lab "nope"`},
		{"stray argument", []string{"rebalance", "extra"}, 2, `unexpected argument "extra"`},
		{"unknown flag", []string{"rebalance", "--nope"}, 2, "flag provided but not defined"},
		{"expiry on a remote broker", []string{"expiry", "--broker", "127.0.0.1:1"}, 2, "needs the in-process broker"},
		{"unreachable broker", []string{"fencing", "--broker", "127.0.0.1:1"}, 1, "connection refused"},
		{"help", []string{"-h"}, 0, "--broker ADDR"},
		{"help names the consumer-protocol labs", []string{"-h"}, 0, "rebalance-848|fencing-848"},
		{"help names the record labs", []string{"-h"}, 0, "|replay|zombie|exactly-once|partition|identity"},
		{"unreachable broker, consumer protocol", []string{"rebalance-848", "--broker", "127.0.0.1:1"}, 1, "connection refused"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var stdout, stderr bytes.Buffer
			require.Equal(t, tc.code, run(context.Background(), append([]string{"lab"}, tc.args...), &stdout, &stderr))
			require.Contains(t, stderr.String(), tc.want)
			require.Empty(t, stdout.String())
		})
	}
}

// TestLabCommandAgainstARunningBroker runs the wire labs with --broker,
// flag before or after the lab's name.
func TestLabCommandAgainstARunningBroker(t *testing.T) {
	t.Parallel()
	b, err := labs.StartBroker(t.Context())
	require.NoError(t, err)
	t.Cleanup(func() { b.Close() })
	for _, args := range [][]string{
		{"lab", "rebalance", "--broker", b.Addr()},
		{"lab", "--broker", b.Addr(), "fencing"},
		{"lab", "rebalance-848", "--broker", b.Addr()},
		{"lab", "--broker", b.Addr(), "fencing-848"},
	} {
		var stdout, stderr bytes.Buffer
		require.Equal(t, 0, run(t.Context(), args, &stdout, &stderr), stderr.String())
		require.Contains(t, stdout.String(), "group lab-")
		require.Contains(t, stdout.String(), "  member 2: lab-orders-1, lab-orders-3")
	}
}

// TestLabPartitionCommandStaysOnItsBroker: "lab partition --broker X"
// without --admin asks 127.0.0.1:9644 (make run's admin API, or nobody)
// which broker it serves, and, that not being X, refuses with status 2
// and the reason before it makes anything on X; with --admin naming
// another broker's API, the same, and that broker's faults list stays
// empty.
func TestLabPartitionCommandStaysOnItsBroker(t *testing.T) {
	t.Parallel()
	start := func() *broker.Broker {
		b, err := broker.Start(t.Context(), broker.Config{Admin: "127.0.0.1:0", AdminAPI: adminapi.New, Topics: map[string]int32{"orders": 4}})
		require.NoError(t, err)
		t.Cleanup(func() { b.Close() })
		return b
	}
	x, y := start(), start()
	untouched := func(b *broker.Broker) {
		t.Helper()
		require.Equal(t, map[string]int32{"orders": 4}, b.Catalog().Counts())
		require.Empty(t, b.Coordinator().Groups())
		require.Empty(t, b.Faults())
	}

	var stdout, stderr bytes.Buffer
	require.Equal(t, 2, run(t.Context(), []string{"lab", "partition", "--broker", x.Addr()}, &stdout, &stderr))
	require.Contains(t, stderr.String(), "minibroker lab partition: the partition lab puts a fault on the broker through its admin API: give its address: the admin API at 127.0.0.1:9644 ")
	require.Contains(t, stderr.String(), "give --admin, the address the broker at "+x.Addr()+" was started with (its --admin flag) (--admin defaults to 127.0.0.1:9644, where make run serves it)\n")
	require.Empty(t, stdout.String())
	untouched(x)

	stdout.Reset()
	stderr.Reset()
	require.Equal(t, 2, run(t.Context(), []string{"lab", "partition", "--broker", x.Addr(), "--admin", y.AdminAddr()}, &stdout, &stderr))
	require.Contains(t, stderr.String(), "the admin API at "+y.AdminAddr()+" serves the broker at "+y.Addr()+", not the one at "+x.Addr())
	require.NotContains(t, stderr.String(), "defaults to")
	require.Empty(t, stdout.String())
	untouched(x)
	untouched(y)
}
