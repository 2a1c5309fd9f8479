package assignor

import (
	"cmp"
	"slices"
	"strconv"
)

// TopicPartition names one partition of one topic.
type TopicPartition struct {
	Topic     string
	Partition int32
}

// String returns the chapter's spelling, "topic-partition".
func (tp TopicPartition) String() string {
	return tp.Topic + "-" + strconv.Itoa(int(tp.Partition))
}

// Compare orders topic partitions by topic name, then partition number.
func (tp TopicPartition) Compare(other TopicPartition) int {
	if c := cmp.Compare(tp.Topic, other.Topic); c != 0 {
		return c
	}
	return cmp.Compare(tp.Partition, other.Partition)
}

// RoundRobin assigns partitions to members.
//
// subscriptions maps each member id to the topics it subscribes to; topics
// maps each known topic to its partition count. Member ids, topic names and
// partition numbers are sorted first. For each topic in order, the sorted
// members subscribed to it are dealt its partitions by one cursor that keeps
// running across topics: it is not reset when the topic changes, so the deal
// continues where the previous topic stopped.
//
// Every member appears in the result, with an empty (non-nil) slice when no
// partition came its way. Topics a member subscribes to that are not in
// topics are ignored. Each member's partitions come out sorted.
func RoundRobin(subscriptions map[string][]string, topics map[string]int32) map[string][]TopicPartition {
	members := make([]string, 0, len(subscriptions))
	subscribed := make(map[string][]string) // topic -> sorted subscribers
	for member, ts := range subscriptions {
		members = append(members, member)
		for _, t := range dedupe(ts) {
			if _, ok := topics[t]; ok {
				subscribed[t] = append(subscribed[t], member)
			}
		}
	}
	slices.Sort(members)

	names := make([]string, 0, len(subscribed))
	for t, subs := range subscribed {
		names = append(names, t)
		slices.Sort(subs)
	}
	slices.Sort(names)

	out := make(map[string][]TopicPartition, len(members))
	for _, m := range members {
		out[m] = []TopicPartition{}
	}
	cursor := 0
	for _, t := range names {
		subs := subscribed[t]
		for p := range topics[t] {
			m := subs[cursor%len(subs)]
			out[m] = append(out[m], TopicPartition{Topic: t, Partition: p})
			cursor++
		}
	}
	return out
}

// dedupe returns ts without repeated names, so a member that lists a topic
// twice is still dealt each partition once.
func dedupe(ts []string) []string {
	if len(ts) < 2 {
		return ts
	}
	seen := make(map[string]struct{}, len(ts))
	out := make([]string, 0, len(ts))
	for _, t := range ts {
		if _, dup := seen[t]; !dup {
			seen[t] = struct{}{}
			out = append(out, t)
		}
	}
	return out
}
