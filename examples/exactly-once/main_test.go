package main

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/minibroker/minibroker/broker"
)

// TestExactlyOnceCopiesEachRecordOnce: 20 records in orders, copied by
// one run with --count 20; a read_committed reader finds each upper-cased
// value once in orders-upper, and the group's committed offsets cover
// every input.
func TestExactlyOnceCopiesEachRecordOnce(t *testing.T) {
	t.Parallel()
	b, err := broker.Start(context.Background(), broker.Config{Topics: map[string]int32{"orders": 2, "orders-upper": 2}, DataDir: t.TempDir()})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, b.Close()) })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	prod, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.DefaultProduceTopic("orders"))
	require.NoError(t, err)
	defer prod.Close()
	var want []string
	for i := range 20 {
		require.NoError(t, prod.ProduceSync(ctx, &kgo.Record{Value: fmt.Appendf(nil, "record-%d", i)}).FirstErr())
		want = append(want, fmt.Sprintf("RECORD-%d", i))
	}
	var out bytes.Buffer
	require.NoError(t, run(ctx, config{brokers: []string{b.Addr()}, group: "eo", from: "orders", to: "orders-upper", id: "eo-test", count: 20}, &out))
	require.Contains(t, out.String(), "committed ")

	reader, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.ConsumeTopics("orders-upper"), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	require.NoError(t, err)
	defer reader.Close()
	var got []string
	for len(got) < len(want) && ctx.Err() == nil {
		reader.PollFetches(ctx).EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	slices.Sort(got)
	slices.Sort(want)
	require.Equal(t, want, got)
	committed := 0
	for p := range int32(2) {
		if e, ok := b.Coordinator().CommittedOffset("eo", "orders", p); ok {
			committed += int(e.Offset) // a partition that got no record has no commit
		}
	}
	require.Equal(t, 20, committed, "the offsets committed with the transactions cover every input")
}
