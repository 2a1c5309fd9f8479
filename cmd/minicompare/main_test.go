package main

import (
	"bytes"
	"context"
	"maps"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/broker"
	"github.com/minibroker/minibroker/tools/compare"
	labs "github.com/minibroker/minibroker/tools/lab"
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
// running broker (real clock) that already has a user's topic orders,
// with records, and a user's group: twice, and each run passes, in topics
// and groups of its own. Each run deletes its groups, then its topics;
// the user's topic, records, group and offsets are as they were.
func TestCompareCommandAgainstARunningBroker(t *testing.T) {
	t.Parallel()
	b, err := broker.Start(t.Context(), broker.Config{ExpiryInterval: 10 * time.Millisecond, Topics: map[string]int32{"orders": 4}})
	require.NoError(t, err)
	t.Cleanup(func() { b.Close() })
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.DefaultProduceTopic("orders"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	for _, v := range []string{"a", "b", "c"} {
		require.NoError(t, cl.ProduceSync(t.Context(), &kgo.Record{Value: []byte(v), Partition: 0}).FirstErr())
	}
	commit := kmsg.NewPtrOffsetCommitRequest()
	commit.Version, commit.Group, commit.Generation = 8, "billing", -1
	commit.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "orders", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 1, LeaderEpoch: -1}}}}
	resp, err := commit.RequestWith(t.Context(), cl)
	require.NoError(t, err)
	require.Zero(t, resp.Topics[0].Partitions[0].ErrorCode)

	var runs []string
	for range 2 {
		var stdout, stderr bytes.Buffer
		require.Equal(t, 0, run(t.Context(), []string{"--broker", b.Addr()}, &stdout, &stderr), stdout.String()+stderr.String())
		out := stdout.String()
		require.Contains(t, out, "Every answer is the documented one.")
		m := regexp.MustCompile(`\ncompare: deleted \d+ groups of run ([0-9a-z]+), with their committed offsets\.\n` +
			`compare: deleted topics (compare-.+) of run ([0-9a-z]+)\.\n$`).FindStringSubmatch(out)
		require.NotNil(t, m, out)
		require.Equal(t, m[1], m[3], "the topics deleted are the run's")
		runs = append(runs, m[1])
		want := slices.Sorted(maps.Keys(compare.RunTopics(labs.OnBroker("compare"))))
		require.Len(t, strings.Split(m[2], ", "), len(want))
		require.Contains(t, m[2], "compare-"+m[1]+"-orders")
	}
	require.NotEqual(t, runs[0], runs[1])

	require.Equal(t, map[string]int32{"orders": 4}, b.Catalog().Counts(), "each run deleted its orders, payments and record topics")
	groups := b.Coordinator().Groups()
	require.Len(t, groups, 1, "only the user's group is left: %v", groups)
	require.Equal(t, "billing", groups[0].Group)
	committed := b.Committed("billing")
	require.Len(t, committed, 1)
	require.Equal(t, int64(1), committed[0].Offset)
	_, end, err := b.Log().Offsets("orders", 0)
	require.NoError(t, err)
	require.Equal(t, int64(3), end, "nobody wrote to the user's topic")
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
