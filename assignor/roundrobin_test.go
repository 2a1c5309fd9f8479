package assignor

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestRoundRobinGolden(t *testing.T) {
	t.Parallel()
	runGolden(t, RoundRobin, []goldenCase{
		{
			name:   "two members share orders(4)",
			subs:   map[string][]string{"b": {"orders"}, "a": {"orders"}},
			topics: map[string]int32{"orders": 4},
			want: map[string][]TopicPartition{
				"a": tps("orders-0", "orders-2"),
				"b": tps("orders-1", "orders-3"),
			},
		},
		{
			name:   "cursor runs across topics",
			subs:   map[string][]string{"a": {"orders", "payments"}, "b": {"payments", "orders"}},
			topics: map[string]int32{"orders": 3, "payments": 1},
			want: map[string][]TopicPartition{
				"a": tps("orders-0", "orders-2"),
				"b": tps("orders-1", "payments-0"),
			},
		},
		{
			name:   "only subscribers are dealt a topic",
			subs:   map[string][]string{"orders-only": {"orders"}, "all": {"orders", "payments"}},
			topics: map[string]int32{"orders": 2, "payments": 1},
			want: map[string][]TopicPartition{
				"all":         tps("orders-0", "payments-0"),
				"orders-only": tps("orders-1"),
			},
		},
		{
			name:   "member with no eligible topic keeps an empty list",
			subs:   map[string][]string{"a": {"orders"}, "b": {"missing"}, "c": nil},
			topics: map[string]int32{"orders": 2},
			want: map[string][]TopicPartition{
				"a": tps("orders-0", "orders-1"),
				"b": {},
				"c": {},
			},
		},
		{
			name:   "more members than partitions",
			subs:   map[string][]string{"a": {"payments"}, "b": {"payments"}},
			topics: map[string]int32{"payments": 1},
			want: map[string][]TopicPartition{
				"a": tps("payments-0"),
				"b": {},
			},
		},
	})
}

func TestTopicPartitionString(t *testing.T) {
	t.Parallel()
	require.Equal(t, "orders-3", TopicPartition{Topic: "orders", Partition: 3}.String())
	require.Equal(t, "my-topic-10", TopicPartition{Topic: "my-topic", Partition: 10}.String())
}

func TestRoundRobinEveryPartitionExactlyOnceToASubscriber(t *testing.T) {
	t.Parallel()
	checkEveryPartitionOnceToASubscriber(t, RoundRobin, rand.New(rand.NewPCG(1, 2)))
}

func TestRoundRobinShuffledInputGivesSameOutput(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(3, 4))
	for iter := range 300 {
		subs, topics := randomInput(r)
		want := RoundRobin(subs, topics)

		shuffled := map[string][]string{}
		for m, ts := range subs {
			c := append([]string(nil), ts...)
			r.Shuffle(len(c), func(i, j int) { c[i], c[j] = c[j], c[i] })
			shuffled[m] = c
		}
		require.Equal(t, want, RoundRobin(shuffled, topics), "iteration %d", iter)
	}
}

func TestRoundRobinEqualSubscriptionsLoadsDifferByAtMostOne(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(5, 6))
	for iter := range 300 {
		_, topics := randomInput(r)
		all := []string{}
		for name := range topics {
			all = append(all, name)
		}
		subs := map[string][]string{}
		for i := range 1 + r.IntN(10) {
			subs[fmt.Sprintf("m%d", i)] = all
		}
		lo, hi := int(^uint(0)>>1), 0
		for _, parts := range RoundRobin(subs, topics) {
			lo, hi = min(lo, len(parts)), max(hi, len(parts))
		}
		require.LessOrEqual(t, hi-lo, 1, "iteration %d", iter)
	}
}

func BenchmarkRoundRobin1000Members10000Partitions(b *testing.B) {
	subs := map[string][]string{}
	topics := map[string]int32{}
	names := []string{}
	for i := range 10 {
		name := fmt.Sprintf("topic-%02d", i)
		topics[name] = 1000
		names = append(names, name)
	}
	for i := range 1000 {
		subs[fmt.Sprintf("member-%06d", i)] = names
	}
	b.ReportAllocs()
	for b.Loop() {
		RoundRobin(subs, topics)
	}
}
