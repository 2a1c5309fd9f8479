package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestCompareETLCommand runs minicompare etl on one protocol, small: the
// table has its rows for both modes and brokers, and the run exits 0
// (nothing missing). The invariants are tools/compare's
// TestCompareETLInvariants. It does not run in parallel: its kgo clients
// would slow the comparison's scenarios that wait on a one-second session
// (TestCompareCommand).
func TestCompareETLCommand(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := run(t.Context(), []string{"etl", "--only", "eager round-robin", "--records", "100", "--members", "2", "--churn", "1", "--stages", "1", "--partitions", "2", "--seed", "5"}, &stdout, &stderr)
	require.Equal(t, 0, code, stdout.String()+stderr.String())
	out := stdout.String()
	require.True(t, strings.HasPrefix(out, "ETL: 100 records, stages 1, partitions 2 per topic, members 2 per stage, churn 1 per stage (seed 5), heartbeat 250ms\n"), out)
	require.Regexp(t, `\neager round-robin +plain +minibroker +100 `, out)
	require.Regexp(t, `\neager round-robin +txn +minibroker +100 +100 +0 `, out)
	require.Equal(t, 2, strings.Count(out, "\n                          kfake  "), out)
	require.Contains(t, stderr.String(), "etl: eager round-robin plain: running on both brokers\n")
	require.Contains(t, stderr.String(), "etl: eager round-robin txn on kfake: 100 in, 100 out, ")
}

func TestCompareETLCommandUsageErrors(t *testing.T) {
	t.Parallel()
	var stdout, stderr bytes.Buffer
	require.Equal(t, 2, run(context.Background(), []string{"etl", "extra"}, &stdout, &stderr))
	require.Contains(t, stderr.String(), `unexpected argument "extra"`)
	require.Equal(t, 2, run(context.Background(), []string{"etl", "--records", "0"}, &stdout, &stderr))
	require.Equal(t, 2, run(context.Background(), []string{"etl", "--only", "nothing"}, &stdout, &stderr))
	require.Contains(t, stderr.String(), `no protocol matches "nothing"`)
	stderr.Reset()
	require.Equal(t, 0, run(context.Background(), []string{"etl", "-h"}, &stdout, &stderr))
	require.Contains(t, stderr.String(), "usage: minicompare etl")
	require.Empty(t, stdout.String())
}
