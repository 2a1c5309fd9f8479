package coordinator

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/minibroker/minibroker/catalog"
	"github.com/minibroker/minibroker/clock"
)

// TestTopicCreatedAfterStartIsJoinable: the coordinator reads the catalog
// it is given, so a topic created there later is subscribable at once, and
// a subscriber sees it at its next join, as in the chapter.
func TestTopicCreatedAfterStartIsJoinable(t *testing.T) {
	t.Parallel()
	cat, err := catalog.Open(catalog.Config{})
	require.NoError(t, err)
	c, err := New(Config{Clock: clock.NewManual(time.UnixMilli(0)), Topics: cat})
	require.NoError(t, err)
	_, err = c.Join(JoinRequest{Group: "g", MemberID: "a", SessionTimeout: defaultSession, Topics: []string{"invoices"}})
	require.ErrorIs(t, err, ErrUnknownTopic)

	_, err = cat.Create("invoices", 3)
	require.NoError(t, err)
	res, err := c.Join(JoinRequest{Group: "g", MemberID: "a", SessionTimeout: defaultSession, Topics: []string{"invoices"}})
	require.NoError(t, err)
	require.Equal(t, []string{"invoices-0", "invoices-1", "invoices-2"}, names(res.Assignment))
	require.NoError(t, c.CommitDirect("manual", entries("invoices-2")))
}

func TestStaticTopics(t *testing.T) {
	t.Parallel()
	topics := StaticTopics{"orders": 4}
	n, ok := topics.Partitions("orders")
	require.True(t, ok)
	require.Equal(t, int32(4), n)
	_, ok = topics.Partitions("nope")
	require.False(t, ok)
}
