package assignor

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestRangeGolden(t *testing.T) {
	t.Parallel()
	runGolden(t, Range, []goldenCase{
		{
			// RangeAssignor's class comment: M0, M1 on T1(3), T2(3).
			name:   "kafka's example co-partitions two topics",
			subs:   map[string][]string{"M1": {"T2", "T1"}, "M0": {"T1", "T2"}},
			topics: map[string]int32{"T1": 3, "T2": 3},
			want: map[string][]TopicPartition{
				"M0": tps("T1-0", "T1-1", "T2-0", "T2-1"),
				"M1": tps("T1-2", "T2-2"),
			},
		},
		{
			name:   "two members share orders(4) in halves",
			subs:   map[string][]string{"b": {"orders"}, "a": {"orders"}},
			topics: map[string]int32{"orders": 4},
			want: map[string][]TopicPartition{
				"a": tps("orders-0", "orders-1"),
				"b": tps("orders-2", "orders-3"),
			},
		},
		{
			name:   "the first members in sorted order take the extra partitions",
			subs:   map[string][]string{"c": {"orders"}, "a": {"orders"}, "b": {"orders"}},
			topics: map[string]int32{"orders": 7},
			want: map[string][]TopicPartition{
				"a": tps("orders-0", "orders-1", "orders-2"),
				"b": tps("orders-3", "orders-4"),
				"c": tps("orders-5", "orders-6"),
			},
		},
		{
			name:   "each topic starts again with its first subscriber",
			subs:   map[string][]string{"a": {"orders", "payments"}, "b": {"orders", "payments"}},
			topics: map[string]int32{"orders": 3, "payments": 1},
			want: map[string][]TopicPartition{
				"a": tps("orders-0", "orders-1", "payments-0"),
				"b": tps("orders-2"),
			},
		},
		{
			name:   "only subscribers share a topic (heterogeneous group)",
			subs:   map[string][]string{"a": {"orders"}, "b": {"orders", "payments"}, "c": {"payments"}},
			topics: map[string]int32{"orders": 4, "payments": 2},
			want: map[string][]TopicPartition{
				"a": tps("orders-0", "orders-1"),
				"b": tps("orders-2", "orders-3", "payments-0"),
				"c": tps("payments-1"),
			},
		},
		{
			name:   "more members than partitions",
			subs:   map[string][]string{"a": {"payments"}, "b": {"payments"}, "c": {"payments"}},
			topics: map[string]int32{"payments": 2},
			want: map[string][]TopicPartition{
				"a": tps("payments-0"),
				"b": tps("payments-1"),
				"c": {},
			},
		},
		{
			name:   "unknown topics and empty subscriptions assign nothing",
			subs:   map[string][]string{"a": {"orders", "missing"}, "b": {"missing"}, "c": nil},
			topics: map[string]int32{"orders": 2},
			want: map[string][]TopicPartition{
				"a": tps("orders-0", "orders-1"),
				"b": {},
				"c": {},
			},
		},
	})
}

func TestRangeEveryPartitionExactlyOnceToASubscriber(t *testing.T) {
	t.Parallel()
	checkEveryPartitionOnceToASubscriber(t, Range, rand.New(rand.NewPCG(7, 8)))
}

// TestRangeEachTopicIsContiguousRangesInMemberOrder checks the shape that
// gives the assignor its name: per topic, the subscribers in sorted order
// hold consecutive ranges whose sizes differ by at most one, larger first.
func TestRangeEachTopicIsContiguousRangesInMemberOrder(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(9, 10))
	for iter := range 500 {
		subs, topics := randomInput(r)
		got := Range(subs, topics)
		members := make([]string, 0, len(subs))
		for m := range subs {
			members = append(members, m)
		}
		slices.Sort(members)
		for topic, n := range topics {
			next, prevSize := int32(0), int32(-1)
			for _, m := range members {
				if !slices.Contains(subs[m], topic) {
					continue
				}
				var mine []int32
				for _, tp := range got[m] {
					if tp.Topic == topic {
						mine = append(mine, tp.Partition)
					}
				}
				for i, p := range mine {
					require.Equal(t, next+int32(i), p, "iteration %d: %s's range of %s is not contiguous", iter, m, topic)
				}
				size := int32(len(mine))
				if prevSize >= 0 {
					require.True(t, size == prevSize || size == prevSize-1 && size >= 0,
						"iteration %d: %s holds %d of %s after a member with %d", iter, m, size, topic, prevSize)
				}
				next, prevSize = next+size, size
			}
			if prevSize >= 0 {
				require.Equal(t, n, next, "iteration %d: %s not covered", iter, topic)
			}
		}
	}
}

func TestRangeShuffledInputGivesSameOutput(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(11, 12))
	for iter := range 300 {
		subs, topics := randomInput(r)
		want := Range(subs, topics)
		shuffled := map[string][]string{}
		for m, ts := range subs {
			c := slices.Clone(ts)
			r.Shuffle(len(c), func(i, j int) { c[i], c[j] = c[j], c[i] })
			shuffled[m] = c
		}
		require.Equal(t, want, Range(shuffled, topics), "iteration %d", iter)
	}
}

// TestRangeEqualSubscriptionsCoPartition: members subscribed to the same
// topics of the same size get the same partition numbers from each.
func TestRangeEqualSubscriptionsCoPartition(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(13, 14))
	for iter := range 200 {
		n := int32(1 + r.IntN(9))
		topics := map[string]int32{"a": n, "b": n, "c": n}
		subs := map[string][]string{}
		for i := range 1 + r.IntN(8) {
			subs[fmt.Sprintf("m%d", i)] = []string{"a", "b", "c"}
		}
		for m, parts := range Range(subs, topics) {
			byTopic := map[string][]int32{}
			for _, tp := range parts {
				byTopic[tp.Topic] = append(byTopic[tp.Topic], tp.Partition)
			}
			require.Equal(t, byTopic["a"], byTopic["b"], "iteration %d: %s", iter, m)
			require.Equal(t, byTopic["a"], byTopic["c"], "iteration %d: %s", iter, m)
		}
	}
}
