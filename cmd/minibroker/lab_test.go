package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

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
