package lab

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestLabConsumerMemberNeedsAGroupAndAnID(t *testing.T) {
	t.Parallel()
	_, err := DialConsumer(testContext(t), "127.0.0.1:1", ConsumerConfig{Group: "g"})
	require.ErrorContains(t, err, "Group and MemberID are required")
	_, err = DialConsumer(testContext(t), "127.0.0.1:1", ConsumerConfig{MemberID: "m"})
	require.ErrorContains(t, err, "Group and MemberID are required")
}

// TestLabConsumerMemberLearnsTopicsCreatedLater: a member subscribed to a
// topic that does not exist yet is assigned it once it is created, and
// reads the new topic's id from Metadata again to name it.
func TestLabConsumerMemberLearnsTopicsCreatedLater(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	b, err := StartBroker(ctx)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, b.Close()) })
	m, err := DialConsumer(ctx, b.Addr(), ConsumerConfig{Group: "g", MemberID: "m", Topics: []string{"payments", "later"}})
	require.NoError(t, err)
	t.Cleanup(func() { m.Close() })
	_, known := m.TopicID("later")
	require.False(t, known)

	code, err := m.Join(ctx)
	require.NoError(t, err)
	require.Zero(t, code)
	require.Equal(t, "payments-0", Partitions(m.Assigned))

	require.NoError(t, b.CreateTopic("later", 2, nil))
	code, err = m.Heartbeat(ctx)
	require.NoError(t, err)
	require.Zero(t, code)
	require.Equal(t, int32(2), m.Epoch)
	require.Equal(t, "later-0, later-1, payments-0", Partitions(m.Assigned))
	_, known = m.TopicID("later")
	require.True(t, known)

	view, err := m.Describe(ctx)
	require.NoError(t, err)
	mv, ok := view.Member("m")
	require.True(t, ok)
	require.Equal(t, m.Assigned, mv.Current)
	_, ok = view.Member("nobody")
	require.False(t, ok)

	code, err = m.Leave(ctx)
	require.NoError(t, err)
	require.Zero(t, code)
	require.Equal(t, int32(-1), m.Epoch)
}
