package main

import (
	"bytes"
	"context"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/minibroker/minibroker/broker"
	"github.com/minibroker/minibroker/internal/testutil"
)

// TestExactlyOnceCopiesEachRecordOnce: 20 records in orders, copied by
// one run with --count 20; a read_committed reader finds each upper-cased
// value once in orders-upper, and the group's committed offsets cover
// every input.
func TestExactlyOnceCopiesEachRecordOnce(t *testing.T) {
	t.Parallel()
	b := startBroker(t, false)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	want := produce(t, b, "record", 20)
	var out bytes.Buffer
	require.NoError(t, run(ctx, config{brokers: []string{b.Addr()}, group: "eo", from: "orders", to: "orders-upper", id: "eo-test", count: 20}, &out))
	require.Contains(t, out.String(), "committed ")
	require.Equal(t, want, readOutput(t, b, kgo.ReadCommitted(), len(want)))
	require.Equal(t, 20, committedInputs(b, "eo"), "the offsets committed with the transactions cover every input")
}

// TestExactlyOnceCountCommitsWhatItWasAskedFor: with 20 records waiting,
// --count 8 commits 8 of them, in as many transactions as its polls
// took, and says so; the offsets committed cover 8 inputs and the output
// holds 8 records.
func TestExactlyOnceCountCommitsWhatItWasAskedFor(t *testing.T) {
	t.Parallel()
	b := startBroker(t, false)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	produce(t, b, "record", 20)
	var out bytes.Buffer
	require.NoError(t, run(ctx, config{brokers: []string{b.Addr()}, group: "eo", from: "orders", to: "orders-upper", id: "eo-count", count: 8}, &out))
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	require.Equal(t, "copied 8 records, as --count 8 asked", lines[len(lines)-1], out.String())
	require.Equal(t, 8, sumCommitted(t, lines[:len(lines)-1]), out.String())
	require.Equal(t, 8, committedInputs(b, "eo"))
	require.Len(t, readOutput(t, b, kgo.ReadCommitted(), 8), 8)
}

// TestExactlyOnceCrashInsideATransaction: --crash-after 1 writes one
// output record and dies inside its first transaction (its connections cut,
// as kill -9 would). Its member stays, with its own client id, until its
// session ends; its transaction stays open until its timeout, the same
// duration. Then another instance copies all eight inputs: a
// read_committed reader finds each once, a read_uncommitted one also the
// aborted write.
func TestExactlyOnceCrashInsideATransaction(t *testing.T) {
	t.Parallel()
	b := startBroker(t, true)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	want := produce(t, b, "more", 8)

	var cut testutil.CutDialer
	var out bytes.Buffer
	crashed := config{brokers: []string{b.Addr()}, group: "eo", from: "orders", to: "orders-upper", id: "eo-crashed",
		session: 10 * time.Second, crashAfter: 1, crash: cut.Cut,
		opts: []kgo.Opt{kgo.Dialer(cut.DialContext)}}
	require.ErrorIs(t, run(ctx, crashed, &out), errCrashed)
	require.Equal(t, "crashing after writing 1 record, inside a transaction it never ends\n", out.String())

	v, ok := b.Coordinator().Describe("eo")
	require.True(t, ok)
	require.Len(t, v.Members, 1, "a crash tells the broker nothing: the member stays until its session ends")
	require.Regexp(t, `^exactly-once-[0-9a-z]+$`, v.Members[0].ClientID, "the instance's own client id")
	require.Equal(t, v.Members[0].ClientID+"-000001", v.Members[0].MemberID)

	// One session timeout later, on the broker's clock: the member expires
	// and its transaction, as old, aborts.
	_, err := b.Advance(10*time.Second + time.Millisecond)
	require.NoError(t, err)
	expired := b.Expire()
	require.Len(t, expired, 1)
	require.Equal(t, v.Members[0].MemberID, expired[0].MemberID)

	out.Reset()
	survivor := config{brokers: []string{b.Addr()}, group: "eo", from: "orders", to: "orders-upper", id: "eo-survivor", count: 8}
	require.NoError(t, run(ctx, survivor, &out))
	require.Equal(t, want, readOutput(t, b, kgo.ReadCommitted(), len(want)), "each input once")
	all := readOutput(t, b, kgo.ReadUncommitted(), len(want)+1)
	require.Len(t, all, len(want)+1, "the crashed instance's write is in the log, behind an abort marker")
}

// TestExactlyOnceClientIDsAreTheInstances: each run's client id is the
// program's name and its start time in base 36, so two runs' members
// differ by more than their sequence number.
func TestExactlyOnceClientIDsAreTheInstances(t *testing.T) {
	t.Parallel()
	b := startBroker(t, true)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	produce(t, b, "id", 1)
	var ids []string
	for i := range 2 {
		// Each run in a group of its own, so that it owns every partition
		// (the first run's member, crashed, stays in its group on the
		// manual clock) and reads the record, wherever it landed.
		group := "eo-ids-" + strconv.Itoa(i)
		var cut testutil.CutDialer
		start := time.Now().UnixMilli()
		cfg := config{brokers: []string{b.Addr()}, group: group, from: "orders", to: "orders-upper", id: group,
			crashAfter: 1, crash: cut.Cut, opts: []kgo.Opt{kgo.Dialer(cut.DialContext)}}
		require.ErrorIs(t, run(ctx, cfg, &bytes.Buffer{}), errCrashed)
		v, ok := b.Coordinator().Describe(group)
		require.True(t, ok)
		require.Len(t, v.Members, 1)
		m := regexp.MustCompile(`^exactly-once-([0-9a-z]+)$`).FindStringSubmatch(v.Members[0].ClientID)
		require.NotNil(t, m, "member client id %q", v.Members[0].ClientID)
		at, err := strconv.ParseInt(m[1], 36, 64)
		require.NoError(t, err)
		require.GreaterOrEqual(t, at, start, "the run's start time, in milliseconds")
		ids = append(ids, v.Members[0].ClientID) // the next run starts later: this one joined a group and began a transaction
	}
	require.NotEqual(t, ids[0], ids[1])
}

// startBroker starts a broker with orders(2) and orders-upper(1), on a
// manual clock when manual is true.
func startBroker(t *testing.T, manual bool) *broker.Broker {
	t.Helper()
	b, err := broker.Start(context.Background(), broker.Config{
		Topics: map[string]int32{"orders": 2, "orders-upper": 1}, DataDir: t.TempDir(), ManualClock: manual,
	})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, b.Close()) })
	return b
}

// produce writes n records "<prefix>-<i>" to orders and returns their
// upper-cased values, sorted: what the example writes for them.
func produce(t *testing.T, b *broker.Broker, prefix string, n int) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.DefaultProduceTopic("orders"))
	require.NoError(t, err)
	defer cl.Close()
	var want []string
	for i := range n {
		require.NoError(t, cl.ProduceSync(ctx, &kgo.Record{Value: fmt.Appendf(nil, "%s-%d", prefix, i)}).FirstErr())
		want = append(want, strings.ToUpper(fmt.Sprintf("%s-%d", prefix, i)))
	}
	slices.Sort(want)
	return want
}

// readOutput reads orders-upper at level until it has n values, and
// returns them sorted.
func readOutput(t *testing.T, b *broker.Broker, level kgo.IsolationLevel, n int) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	reader, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.ConsumeTopics("orders-upper"), kgo.FetchIsolationLevel(level))
	require.NoError(t, err)
	defer reader.Close()
	var got []string
	for len(got) < n && ctx.Err() == nil {
		reader.PollFetches(ctx).EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	require.NoError(t, ctx.Err(), "read %d of %d: %v", len(got), n, got)
	slices.Sort(got)
	return got
}

// committedInputs sums the group's committed offsets on orders: how many
// inputs the transactions committed (a partition without a commit
// counts 0).
func committedInputs(b *broker.Broker, group string) int {
	n := 0
	for p := range int32(2) {
		if e, ok := b.Coordinator().CommittedOffset(group, "orders", p); ok {
			n += int(e.Offset)
		}
	}
	return n
}

// sumCommitted sums the "committed N records" lines; every line is one
// of those or an "aborted N records" line.
func sumCommitted(t *testing.T, lines []string) int {
	t.Helper()
	n := 0
	for _, l := range lines {
		if m := regexp.MustCompile(`^committed (\d+) records$`).FindStringSubmatch(l); m != nil {
			k, _ := strconv.Atoi(m[1])
			n += k
			continue
		}
		require.Regexp(t, `^aborted \d+ records: `, l)
	}
	return n
}
