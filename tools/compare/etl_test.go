package compare

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestCompareETLInvariants runs a small minicompare etl, every protocol
// plainly and in transactions, on both brokers, and holds each result to
// what the models promise: every record written, none missing; on kfake
// (Kafka's join barrier, revoke-first reconciliation) none processed
// twice without transactions; with transactions none twice downstream
// on either broker. How many records minibroker processes twice depends
// on timing and is not asserted, only that what it counts adds up.
func TestCompareETLInvariants(t *testing.T) {
	t.Parallel()
	cfg := ETLConfig{Records: 200, Partitions: 3, Stages: 1, Members: 2, Churn: 2, Seed: 7,
		Heartbeat: 100 * time.Millisecond, Timeout: 90 * time.Second, Parallel: len(ETLRows())}
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	addrs, stop, err := StartETLBrokers(ctx, cfg.Heartbeat)
	require.NoError(t, err)
	defer stop()
	results := RunETL(ctx, cfg, addrs, nil)

	rows := ETLRows()
	require.Len(t, results, 2*len(rows))
	for i, r := range results {
		row, side := rows[i/2], Sides()[i%2]
		name := row.Protocol.Name + " " + row.Mode() + " on " + string(side)
		require.Equal(t, row.slug(), r.Row.slug(), name)
		require.Equal(t, side, r.Side, name)
		require.NoError(t, r.Err, name)
		require.Equal(t, cfg.Records, r.In, name)
		require.Zero(t, r.Missing, "%s: every record reaches the last topic", name)
		require.Positive(t, r.Rebalances, "%s: members joined and left", name)
		extra := 0 // copies beyond the first in the output
		for times, n := range r.Reprocessed {
			require.GreaterOrEqual(t, times, 2, name)
			require.Positive(t, n, name)
			extra += n
		}
		require.Equal(t, extra, r.Twice(), name)
		switch {
		case row.Transactional:
			require.Zero(t, r.DupOut, "%s: a read_committed reader sees each record once", name)
			require.Equal(t, cfg.Records, r.Out, name)
		case side == Kfake:
			require.Zero(t, r.Twice(), "%s: Kafka's rebalance moves no partition before its owner has committed", name)
			require.Zero(t, r.DupOut, name)
			require.Equal(t, cfg.Records, r.Out, name)
			require.Empty(t, r.PollErrors, name)
			require.Empty(t, r.CommitErrors, name)
		default:
			// A record twice in the output was processed twice by a stage;
			// each copy beyond the first is a record in Out beyond In.
			require.LessOrEqual(t, r.DupOut, r.Twice(), name)
			require.GreaterOrEqual(t, r.Out, r.In+r.DupOut, name)
		}
		if r.DupOut == 0 {
			require.Equal(t, cfg.Records, r.Out, name)
		}
	}

	var out bytes.Buffer
	require.NoError(t, WriteETLTable(&out, cfg, results))
	lines := strings.Split(out.String(), "\n")
	require.Equal(t, "ETL: 200 records, stages 1, partitions 3 per topic, members 2 per stage, churn 2 per stage (seed 7), heartbeat 100ms", lines[0])
	require.Regexp(t, `^PROTOCOL +MODE +BROKER +IN +OUT +MISSING +TWICE\+ +TIMES +DUP OUT +REBALANCES +POLL ERRORS +COMMIT ERRORS +TIME$`, lines[2])
	require.Regexp(t, `^eager range +plain +minibroker +200 +\d+ +0 +\d+ `, lines[3])
	require.Regexp(t, `^ +kfake +200 +200 +0 +0 +- +0 +\d+ +- +- +\d`, lines[4])
	require.Contains(t, out.String(), "No record went missing on either broker.")
}
