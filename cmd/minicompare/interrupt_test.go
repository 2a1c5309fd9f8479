package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/minibroker/minibroker/broker"
	"github.com/minibroker/minibroker/broker/adminapi"
	"github.com/minibroker/minibroker/coordinator"
	"github.com/minibroker/minibroker/internal/testutil"
)

// stopWithin bounds how long an interrupted run may take to stop: a
// second or two on an idle machine, with room for a loaded one.
const stopWithin = 10 * time.Second

// runUntilStopped runs the command with args in the background, calls
// interrupt (which cancels ctx) once ready reports true, and returns the
// exit code, failing unless the run stops within stopWithin of it.
func runUntilStopped(t *testing.T, ctx context.Context, args []string, stdout, stderr io.Writer, interrupted <-chan struct{}) int {
	t.Helper()
	done := make(chan int, 1)
	go func() { done <- run(ctx, args, stdout, stderr) }()
	select {
	case <-interrupted:
	case code := <-done:
		select {
		case <-interrupted: // it stopped at once: both were ready
			return code
		default:
		}
		t.Fatalf("%v ended (%d) before the interrupt", args, code)
	}
	stop, cancel := context.WithTimeout(t.Context(), stopWithin)
	defer cancel()
	select {
	case code := <-done:
		return code
	case <-stop.Done():
		t.Fatalf("%v did not stop within %v of the interrupt", args, stopWithin)
		return -1
	}
}

// TestCompareCommandInterrupted: minicompare --broker, interrupted once
// its scenarios are playing on the broker (a group of the run exists):
// it prints no table, says it was interrupted and what it removed, exits
// 130 within a second or two, and the broker holds nothing of the run:
// kadm lists no group and only the user's topic, the admin API no fault,
// and no transaction of the run is left open.
func TestCompareCommandInterrupted(t *testing.T) {
	t.Parallel()
	b, err := broker.Start(t.Context(), broker.Config{Admin: "127.0.0.1:0", AdminAPI: adminapi.New, ExpiryInterval: 10 * time.Millisecond,
		Topics: map[string]int32{"orders": 4}})
	require.NoError(t, err)
	t.Cleanup(func() { b.Close() })
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	interrupted := make(chan struct{})
	go func() {
		defer cancel()           // Ctrl-C, once the test knows of it
		defer close(interrupted) // runs first
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for ctx.Err() == nil && !slices.ContainsFunc(b.Coordinator().Groups(), func(g coordinator.GroupListing) bool { return strings.HasPrefix(g.Group, "compare-") }) {
			<-tick.C
		}
	}()
	var stdout, stderr testutil.Buffer
	code := runUntilStopped(t, ctx, []string{"--broker", b.Addr()}, &stdout, &stderr, interrupted)
	out := stdout.String()
	require.Equal(t, 130, code, out+stderr.String())
	require.Equal(t, "minicompare: interrupted\n", stderr.String(), out)
	require.Regexp(t, `^minicompare: interrupted after \d+ of \d+ scenarios; no table\.\n\ncompare: removing what run [0-9a-z]+ made on the broker\.\n`, out)
	require.NotContains(t, out, "SCENARIO")
	require.NotContains(t, out, "could not")
	run := regexp.MustCompile(`removing what run ([0-9a-z]+) made`).FindStringSubmatch(out)[1]
	require.Regexp(t, `\ncompare: deleted \d+ groups? of run `+run+`, with their committed offsets\.\n`, out)

	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()))
	require.NoError(t, err)
	defer cl.Close()
	adm := kadm.NewClient(cl)
	groups, err := adm.ListGroups(t.Context())
	require.NoError(t, err)
	require.Empty(t, groups.Groups())
	topics, err := adm.ListTopics(t.Context())
	require.NoError(t, err)
	require.Equal(t, []string{"orders"}, topics.Names())
	resp, err := http.Get("http://" + b.AdminAddr() + "/v1/faults")
	require.NoError(t, err)
	defer resp.Body.Close()
	var faults struct {
		Faults []json.RawMessage `json:"faults"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&faults))
	require.Empty(t, faults.Faults)
	txns, err := adm.ListTransactions(t.Context(), nil, []string{"Ongoing", "PrepareCommit", "PrepareAbort"})
	require.NoError(t, err)
	for _, tx := range txns.Sorted() {
		require.NotContains(t, tx.TxnID, run, "a transaction of the run is still open")
	}
}

// TestCompareETLCommandInterrupted: minicompare etl, interrupted once its
// first run has finished (the others still moving records or not begun):
// it stops within a second or two, exits 130, says it was interrupted,
// and its table marks the runs cut short and does not claim that nothing
// went missing. Not parallel, as TestCompareETLCommand.
func TestCompareETLCommandInterrupted(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	interrupted := make(chan struct{})
	stderr := testutil.NewTrigger(regexp.MustCompile(`etl: [a-z -]+ on (minibroker|kfake): \d+ in`), func() { close(interrupted); cancel() })
	var stdout testutil.Buffer
	code := runUntilStopped(t, ctx, []string{"etl", "--only", "eager", "--records", "2000", "--members", "2", "--churn", "2", "--stages", "2", "--partitions", "3", "--seed", "5"},
		&stdout, stderr, interrupted)
	out := stdout.String()
	require.Equal(t, 130, code, out+stderr.String())
	require.True(t, strings.HasSuffix(stderr.String(), "minicompare etl: interrupted\n"), stderr.String())
	require.Regexp(t, `(minibroker|kfake) +interrupted\n`, out)
	require.Regexp(t, `\nInterrupted: \d+ of 8 runs did not finish; the sums leave them out\.\n`, out)
	require.NotContains(t, out, "No record went missing on either broker.")
	require.NotContains(t, out, "error:")
}
