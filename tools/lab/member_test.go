package lab

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/assignor"
	"github.com/minibroker/minibroker/protocol"
)

// TestLabMemberLeaderPlan checks the plan a leader sends: the round-robin
// over the members' metadata by default, or what a Planner returns.
func TestLabMemberLeaderPlan(t *testing.T) {
	t.Parallel()
	meta := func(topics ...string) []byte {
		m := kmsg.NewConsumerMemberMetadata()
		m.Topics = topics
		return m.AppendTo(nil)
	}
	m := &Member{ID: "b", Leader: "b", cfg: MemberConfig{Plan: DefaultTopics()}}
	m.joined = []kmsg.JoinGroupResponseMember{
		{MemberID: "b", ProtocolMetadata: meta("orders")},
		{MemberID: "a", ProtocolMetadata: meta("orders", "payments")},
	}
	plan, err := m.plan()
	require.NoError(t, err)
	require.Len(t, plan, 2)
	require.Equal(t, "a", plan[0].MemberID, "sorted by member id")
	got := map[string][]assignor.TopicPartition{}
	for _, p := range plan {
		got[p.MemberID], err = protocol.DecodeAssignment(p.MemberAssignment)
		require.NoError(t, err)
	}
	require.Equal(t, assignor.RoundRobin(map[string][]string{"a": {"orders", "payments"}, "b": {"orders"}}, DefaultTopics()), got)

	m.cfg.Planner = func(leader string, subs map[string][]string) map[string][]assignor.TopicPartition {
		require.Equal(t, "b", leader)
		require.Len(t, subs, 2)
		return map[string][]assignor.TopicPartition{leader: {TP("orders", 0)}}
	}
	plan, err = m.plan()
	require.NoError(t, err)
	got = map[string][]assignor.TopicPartition{}
	for _, p := range plan {
		got[p.MemberID], err = protocol.DecodeAssignment(p.MemberAssignment)
		require.NoError(t, err)
	}
	require.Equal(t, map[string][]assignor.TopicPartition{"a": nil, "b": {TP("orders", 0)}}, got)

	m.joined[0].ProtocolMetadata = []byte{1}
	_, err = m.plan()
	require.ErrorContains(t, err, "metadata of member b")
}

func TestLabMemberNeedsAGroup(t *testing.T) {
	t.Parallel()
	_, err := Dial(testContext(t), "127.0.0.1:1", MemberConfig{})
	require.ErrorContains(t, err, "Group is required")
}
