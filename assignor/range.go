package assignor

import "slices"

// Range assigns partitions as Kafka's server-side range assignor does
// (group-coordinator's org.apache.kafka.coordinator.group.assignor.RangeAssignor,
// the "range" of KIP-848's ServerAssignor): each topic is cut into
// contiguous ranges, one per member subscribed to it, in sorted member-id
// order. A topic of n partitions shared by k subscribers gives each n/k
// partitions, and the first n%k of them (in sorted order) one more.
//
// Unlike RoundRobin, nothing runs across topics: every topic starts again
// with the first subscriber, so members subscribed to the same topics of
// the same size get the same partition numbers from each (co-partitioning,
// the reason range exists). Kafka sorts static members first by instance
// id; there is no static membership here, so member ids alone decide.
//
// The input and output are RoundRobin's: subscriptions maps each member id
// to its topics, topics each known topic to its partition count; topics a
// member names that are not in topics are ignored (Kafka's subscription
// metadata holds only topics that exist), every member appears in the
// result, with an empty (non-nil) slice when it got nothing, and each
// member's partitions come out sorted.
func Range(subscriptions map[string][]string, topics map[string]int32) map[string][]TopicPartition {
	subscribed := make(map[string][]string) // topic -> its subscribers
	out := make(map[string][]TopicPartition, len(subscriptions))
	for member, ts := range subscriptions {
		out[member] = []TopicPartition{}
		for _, t := range dedupe(ts) {
			if _, ok := topics[t]; ok {
				subscribed[t] = append(subscribed[t], member)
			}
		}
	}
	names := make([]string, 0, len(subscribed))
	for t := range subscribed {
		names = append(names, t)
	}
	slices.Sort(names)
	for _, t := range names {
		subs := subscribed[t]
		slices.Sort(subs)
		n, k := topics[t], int32(len(subs))
		quota, extra := n/k, n%k
		next := int32(0)
		for i, m := range subs {
			size := quota
			if int32(i) < extra {
				size++
			}
			for p := next; p < next+size; p++ {
				out[m] = append(out[m], TopicPartition{Topic: t, Partition: p})
			}
			next += size
		}
	}
	return out
}
