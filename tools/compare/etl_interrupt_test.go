package compare

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/minibroker/minibroker/internal/interrupt"
)

// TestCompareETLInterrupted: an ETL whose context is canceled while its
// transactional pipeline is moving records (the last topic has some on
// both brokers), as Ctrl-C cancels it, returns within a second or two:
// each unfinished run says it was interrupted, every member has left its
// group on both brokers (kadm finds no group with members), and the
// table's reading says the runs did not finish instead of that nothing
// went missing. The brokers keep answering until the caller stops them,
// whatever the run's context, so the clients close against live brokers.
func TestCompareETLInterrupted(t *testing.T) {
	t.Parallel()
	var row ETLRow
	for _, r := range ETLRows() {
		if r.Transactional && r.Protocol.Name == "eager range" {
			row = r
		}
	}
	require.True(t, row.Transactional)
	cfg := ETLConfig{Records: 100_000, Partitions: 3, Stages: 2, Members: 2, Churn: 2, Seed: 3,
		Heartbeat: 100 * time.Millisecond, Timeout: 2 * time.Minute, Rows: []ETLRow{row}, Parallel: 1}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	addrs, stop, err := StartETLBrokers(ctx, cfg.Heartbeat)
	require.NoError(t, err)
	defer stop()
	admins := map[Side]*kadm.Client{}
	for _, side := range Sides() {
		cl, err := kgo.NewClient(kgo.SeedBrokers(addrs[side]))
		require.NoError(t, err)
		defer cl.Close()
		admins[side] = kadm.NewClient(cl)
	}

	done := make(chan []ETLResult, 1)
	go func() { done <- RunETL(ctx, cfg, addrs, nil) }()
	last := ETLTopics(cfg, row)[cfg.Stages]
	flowing := func() bool {
		for _, side := range Sides() {
			ends, err := admins[side].ListEndOffsets(t.Context(), last)
			if err != nil {
				return false
			}
			total := int64(0)
			ends.Each(func(o kadm.ListedOffset) { total += max(o.Offset, 0) })
			if total == 0 {
				return false
			}
		}
		return true
	}
	wait, cancelWait := context.WithTimeout(t.Context(), time.Minute)
	defer cancelWait()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for !flowing() {
		select {
		case results := <-done:
			t.Fatalf("the run ended before records reached its last topic: %+v", results)
		case <-wait.Done():
			t.Fatal("records never reached the last topic")
		case <-tick.C:
		}
	}
	cancel() // Ctrl-C

	stopped, cancelStopped := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancelStopped()
	var results []ETLResult
	select {
	case results = <-done:
	case <-stopped.Done():
		t.Fatal("the ETL did not stop within 10 s of the interrupt")
	}
	require.Len(t, results, 2)
	for _, r := range results {
		require.True(t, errors.Is(r.Err, interrupt.ErrInterrupted), "%s: %v", r.Side, r.Err)
	}
	for _, side := range Sides() {
		described, err := admins[side].DescribeGroups(t.Context())
		require.NoError(t, err, side)
		require.NotEmpty(t, described, side)
		for _, g := range described.Sorted() {
			require.Empty(t, g.Members, "%s: %s still has members", side, g.Group)
		}
	}

	var out bytes.Buffer
	require.NoError(t, WriteETLTable(&out, cfg, results))
	require.Regexp(t, `\neager range +txn +minibroker +interrupted\n +kfake +interrupted\n`, out.String())
	require.Contains(t, out.String(), "Interrupted: 2 of 2 runs did not finish; the sums leave them out.\n")
	require.NotContains(t, out.String(), "No record went missing on either broker.")
	require.False(t, strings.Contains(out.String(), "error:"), out.String())
}
