package assignor

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// tps parses "topic-partition" names.
func tps(specs ...string) []TopicPartition {
	out := []TopicPartition{}
	for _, s := range specs {
		var tp TopicPartition
		i := len(s) - 1
		for s[i] != '-' {
			i--
		}
		_, err := fmt.Sscanf(s[i+1:], "%d", &tp.Partition)
		if err != nil {
			panic(err)
		}
		tp.Topic = s[:i]
		out = append(out, tp)
	}
	return out
}

// randomInput builds a group of up to 12 members over up to 5 topics.
func randomInput(r *rand.Rand) (map[string][]string, map[string]int32) {
	topics := map[string]int32{}
	names := []string{}
	for i := range 1 + r.IntN(5) {
		name := fmt.Sprintf("t%d", i)
		topics[name] = int32(1 + r.IntN(9))
		names = append(names, name)
	}
	subs := map[string][]string{}
	for i := range 1 + r.IntN(12) {
		var ts []string
		for _, n := range names {
			if r.IntN(3) > 0 {
				ts = append(ts, n)
			}
		}
		subs[fmt.Sprintf("m%02d", i)] = ts
	}
	return subs, topics
}

// assignFunc is an assignor: RoundRobin or Range.
type assignFunc func(subs map[string][]string, topics map[string]int32) map[string][]TopicPartition

// goldenCase is one input and the assignment it must give.
type goldenCase struct {
	name   string
	subs   map[string][]string
	topics map[string]int32
	want   map[string][]TopicPartition
}

// commonCases are inputs on which every assignor agrees.
var commonCases = []goldenCase{
	{
		name:   "a topic listed twice counts once",
		subs:   map[string][]string{"a": {"orders", "orders"}, "b": {"orders"}},
		topics: map[string]int32{"orders": 2},
		want: map[string][]TopicPartition{
			"a": tps("orders-0"),
			"b": tps("orders-1"),
		},
	},
	{
		name:   "no members",
		subs:   map[string][]string{},
		topics: map[string]int32{"orders": 2},
		want:   map[string][]TopicPartition{},
	},
}

// runGolden checks assign against cases and commonCases.
func runGolden(t *testing.T, assign assignFunc, cases []goldenCase) {
	t.Helper()
	for _, tc := range append(cases, commonCases...) {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.want, assign(tc.subs, tc.topics))
		})
	}
}

// checkEveryPartitionOnceToASubscriber runs assign on random inputs: every
// member gets a sorted list, every partition of a topic someone subscribes
// to goes to exactly one of its subscribers, and no other partition is
// assigned.
func checkEveryPartitionOnceToASubscriber(t *testing.T, assign assignFunc, r *rand.Rand) {
	t.Helper()
	for iter := range 500 {
		subs, topics := randomInput(r)
		got := assign(subs, topics)
		require.Len(t, got, len(subs), "iteration %d", iter)
		owner := map[TopicPartition]string{}
		for m, parts := range got {
			require.True(t, slices.IsSortedFunc(parts, TopicPartition.Compare), "iteration %d: %s's partitions are not sorted", iter, m)
			for _, tp := range parts {
				prev, dup := owner[tp]
				require.False(t, dup, "iteration %d: %s assigned to %s and %s", iter, tp, prev, m)
				owner[tp] = m
				require.Contains(t, subs[m], tp.Topic, "iteration %d: %s not subscribed to %s", iter, m, tp.Topic)
			}
		}
		for topic, n := range topics {
			subscribed := false
			for _, ts := range subs {
				subscribed = subscribed || slices.Contains(ts, topic)
			}
			for p := range n {
				_, ok := owner[TopicPartition{Topic: topic, Partition: p}]
				require.Equal(t, subscribed, ok, "iteration %d: %s-%d", iter, topic, p)
			}
		}
	}
}
