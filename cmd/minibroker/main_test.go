package main

import (
	"bytes"
	"context"
	"os"
	"testing"

	"github.com/minibroker/minibroker/internal/testutil"
	"github.com/minibroker/minibroker/protocol"
	"github.com/stretchr/testify/require"
)

func TestRunUsage(t *testing.T) {
	t.Parallel()
	var stdout, stderr bytes.Buffer
	require.Equal(t, 2, run(context.Background(), nil, &stdout, &stderr))
	require.Contains(t, stderr.String(), "usage:")
	require.Equal(t, 2, run(context.Background(), []string{"bogus"}, &stdout, &stderr))
	require.Contains(t, stderr.String(), `unknown command "bogus"`)
	require.Equal(t, 0, run(context.Background(), []string{"help"}, &stdout, &stderr))
	require.Contains(t, stdout.String(), "minibroker serve")
	require.Equal(t, 0, run(context.Background(), []string{"serve", "-h"}, &stdout, &stderr))
	require.Contains(t, stderr.String(), "-min-session-timeout")
	stdout.Reset()
	require.Equal(t, 0, run(context.Background(), []string{"apis"}, &stdout, &stderr))
	require.Equal(t, protocol.APITable(), stdout.String())
	require.Contains(t, stdout.String(), "| SASLAuthenticate | 36 | 0-2 |\n")
	require.Equal(t, 2, run(context.Background(), []string{"apis", "extra"}, &stdout, &stderr))
}

// TestMain removes the binary the process-level tests built.
func TestMain(m *testing.M) {
	code := m.Run()
	testutil.RemoveBuilds()
	os.Exit(code)
}
