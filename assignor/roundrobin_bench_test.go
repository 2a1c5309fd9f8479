package assignor

import (
	"fmt"
	"testing"
)

// BenchmarkRoundRobin assigns one topic's partitions to a group of
// members, as a rebalance does.
func BenchmarkRoundRobin(b *testing.B) {
	for _, members := range []int{10, 100, 1_000} {
		b.Run(fmt.Sprintf("members=%d/partitions=10000", members), func(b *testing.B) {
			subs := make(map[string][]string, members)
			for i := range members {
				subs[fmt.Sprintf("m-%06d", i)] = []string{"orders"}
			}
			topics := map[string]int32{"orders": 10_000}
			for b.Loop() {
				RoundRobin(subs, topics)
			}
		})
	}
}

// BenchmarkRoundRobinManyTopics spreads 100 topics of 100 partitions over
// 100 members with mixed subscriptions.
func BenchmarkRoundRobinManyTopics(b *testing.B) {
	subs := make(map[string][]string, 100)
	topics := make(map[string]int32, 100)
	for t := range 100 {
		topics[fmt.Sprintf("t%03d", t)] = 100
	}
	for i := range 100 {
		var ts []string
		for t := range 100 {
			if (i+t)%3 != 0 {
				ts = append(ts, fmt.Sprintf("t%03d", t))
			}
		}
		subs[fmt.Sprintf("m-%03d", i)] = ts
	}
	for b.Loop() {
		RoundRobin(subs, topics)
	}
}
