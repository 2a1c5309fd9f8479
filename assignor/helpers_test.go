package assignor

import (
	"fmt"
	"math/rand/v2"
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
