package protocol

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/assignor"
)

// EncodeAssignment renders partitions as a version 0
// ConsumerMemberAssignment: the bytes SyncGroup and DescribeGroups carry
// for a member, and a leader's plan for each member. Partitions of one
// topic must be adjacent (the assignor sorts them by topic, then
// partition); a topic named again after another opens a second entry. No
// partition is the 10-byte assignment with no topics, never zero bytes.
func EncodeAssignment(parts []assignor.TopicPartition) []byte {
	a := kmsg.NewConsumerMemberAssignment()
	for _, tp := range parts {
		n := len(a.Topics)
		if n == 0 || a.Topics[n-1].Topic != tp.Topic {
			a.Topics = append(a.Topics, kmsg.ConsumerMemberAssignmentTopic{Topic: tp.Topic})
			n++
		}
		a.Topics[n-1].Partitions = append(a.Topics[n-1].Partitions, tp.Partition)
	}
	return a.AppendTo(nil)
}

// DecodeAssignment reads a ConsumerMemberAssignment back into partitions,
// in the order the bytes list them. Zero bytes (what Kafka sends a member
// its leader left out) is no partition.
func DecodeAssignment(b []byte) ([]assignor.TopicPartition, error) {
	if len(b) == 0 {
		return nil, nil
	}
	var a kmsg.ConsumerMemberAssignment
	if err := a.ReadFrom(b); err != nil {
		return nil, fmt.Errorf("protocol: decode assignment: %w", err)
	}
	var out []assignor.TopicPartition
	for _, t := range a.Topics {
		for _, p := range t.Partitions {
			out = append(out, assignor.TopicPartition{Topic: t.Topic, Partition: p})
		}
	}
	return out, nil
}
