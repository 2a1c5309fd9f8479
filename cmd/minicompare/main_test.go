package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/minibroker/minibroker/broker"
	"github.com/minibroker/minibroker/tools/compare"
)

// TestCompareCommand runs minicompare against its in-process
// brokers: every scenario gets a row and every answer is the documented
// one. Its running time (about 2 s) is reported by `go test -v`, not
// asserted: speed belongs in benchmarks.
func TestCompareCommand(t *testing.T) {
	t.Parallel()
	var stdout, stderr bytes.Buffer
	require.Equal(t, 0, run(t.Context(), nil, &stdout, &stderr), stdout.String()+stderr.String())
	out := stdout.String()
	require.True(t, strings.HasPrefix(out, "SCENARIO "), out)
	for _, sc := range compare.Scenarios() {
		require.Contains(t, out, "\n"+sc.Name+" ")
	}
	require.Contains(t, out, "Every answer is the documented one.")
	require.NotContains(t, out, "! ")
	require.Empty(t, stderr.String())
}

// TestCompareCommandAgainstARunningBroker points the minibroker side at a
// running broker (real clock) that lacks the scenarios' topics: compare
// creates them, and a topic of one partition for each record scenario of
// the run, then every answer is the documented one.
func TestCompareCommandAgainstARunningBroker(t *testing.T) {
	t.Parallel()
	b, err := broker.Start(t.Context(), broker.Config{ExpiryInterval: 10 * time.Millisecond})
	require.NoError(t, err)
	t.Cleanup(func() { b.Close() })
	var stdout, stderr bytes.Buffer
	require.Equal(t, 0, run(t.Context(), []string{"--broker", b.Addr()}, &stdout, &stderr), stdout.String()+stderr.String())
	require.Contains(t, stdout.String(), "Every answer is the documented one.")
	counts := b.Catalog().Counts()
	for name, n := range compare.Topics() {
		require.Equal(t, n, counts[name], name)
		delete(counts, name)
	}
	var records []string
	for _, sc := range compare.Scenarios() {
		if sc.Records {
			records = append(records, sc.Name)
		}
	}
	require.Len(t, counts, len(records), "one topic per record scenario: %v", counts)
	for name, n := range counts {
		require.Regexp(t, `^compare-(`+strings.Join(records, "|")+`)-[0-9a-z]+$`, name)
		require.Equal(t, int32(1), n, name)
	}
}

func TestCompareCommandUsageErrors(t *testing.T) {
	t.Parallel()
	var stdout, stderr bytes.Buffer
	require.Equal(t, 2, run(context.Background(), []string{"extra"}, &stdout, &stderr))
	require.Contains(t, stderr.String(), `unexpected argument "extra"`)
	require.Equal(t, 2, run(context.Background(), []string{"--nope"}, &stdout, &stderr))
	require.Equal(t, 0, run(context.Background(), []string{"-h"}, &stdout, &stderr))
	require.Contains(t, stderr.String(), "usage: minicompare")
	stderr.Reset()
	require.Equal(t, 1, run(context.Background(), []string{"--broker", "127.0.0.1:1"}, &stdout, &stderr))
	require.Contains(t, stderr.String(), "connection refused")
	require.Empty(t, stdout.String())
}
