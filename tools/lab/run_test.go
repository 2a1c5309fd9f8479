package lab

import (
	"bytes"
	"context"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/minibroker/minibroker/broker"
	"github.com/minibroker/minibroker/testkit/wiretest"
)

func TestLabRunUnknownLab(t *testing.T) {
	t.Parallel()
	require.ErrorIs(t, Run(testContext(t), "nope", &bytes.Buffer{}, ""), ErrUnknownLab)
}

func TestLabRunExpiryNeedsInProcessBroker(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	require.ErrorIs(t, Run(testContext(t), "expiry", &out, "127.0.0.1:1"), ErrNeedsInProcess)
	require.Empty(t, out.String())
	require.ErrorIs(t, Expiry(testContext(t), &out, nil, "g"), ErrNeedsInProcess)
}

// TestLabAgainstRunningBroker runs the wire labs twice against one broker
// that outlives them, as --broker does, beside a user's topic orders and
// group billing: each run uses a group and a topic of its own (so the
// second run is not disturbed by the first, and orders and billing are
// not touched), deletes its group at the end, and says that the topic its
// runs share stays. The record labs run once each, end their members'
// sessions by waiting for the broker's expiry step on the real clock, and
// delete the topics of their run.
func TestLabAgainstRunningBroker(t *testing.T) {
	t.Parallel()
	b, err := broker.Start(context.Background(), broker.Config{Topics: map[string]int32{"orders": 2}}) // outlives each lab's 10 s context
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, b.Close()) })
	user := wiretest.Dial(t, b.Addr(), "user-app")
	userCommit(t, user, "billing", "orders", 1, 7)

	wire := []string{"rebalance", "fencing", "rebalance-848", "fencing-848", "identity"}
	for _, name := range append(append(wire, wire...), "replay", "zombie", "exactly-once") {
		var out bytes.Buffer
		require.NoError(t, Run(testContext(t), name, &out, b.Addr()), "lab %s:\n%s", name, out.String())
		m := regexp.MustCompile(`group (lab-` + regexp.QuoteMeta(name) + `-([0-9a-z]+))[, -]`).FindStringSubmatch(out.String())
		require.NotNil(t, m, "lab %s names its group:\n%s", name, out.String())
		topic := "lab-orders"
		if name == "identity" {
			topic = IdentityTopic
		}
		topics := topic
		if recordLab(name) {
			topic = "lab-" + m[2] + "-payments"
			topics = topic
			require.Contains(t, out.String(), "expiry step (the broker's own): removed a-")
		}
		if name == "exactly-once" {
			topics = strings.Join(slices.Sorted(slices.Values([]string{topic, outputTopic(m[1])})), ", ")
		}
		require.Contains(t, out.String(), topic+"-0", "the lab uses its own topic")
		require.NotContains(t, out.String(), " orders-", "nor the user's")
		end := `lab: topics ` + regexp.QuoteMeta(topics) + ` stay on the broker \(every run of lab shares them\); DeleteTopics \(kadm, or the delete button on the live page\) or a new data dir removes them\.\n$`
		if recordLab(name) { // a topic of the run's own
			end = `lab: deleted topics ` + regexp.QuoteMeta(topics) + ` of run ` + m[2] + `\.\n$`
		}
		require.Regexp(t, `\nlab: deleted (1 group|[2-9] groups) of run `+m[2]+`, with their committed offsets\.\n`+end, out.String())
	}
	counts := b.Catalog().Counts()
	require.Equal(t, int32(2), counts["orders"])
	delete(counts, "orders")
	require.Equal(t, int32(4), counts["lab-orders"], "the group labs share one topic")
	delete(counts, "lab-orders")
	require.Equal(t, int32(4), counts[IdentityTopic], "the identity lab's own topic")
	delete(counts, IdentityTopic)
	require.Empty(t, counts, "every record lab deleted the topics of its run")
	groups := b.Coordinator().Groups()
	require.Len(t, groups, 1, "every lab group is deleted: %v", groups)
	require.Equal(t, "billing", groups[0].Group)
	committed := b.Coordinator().Committed("billing")
	require.Len(t, committed, 1)
	require.Equal(t, int64(7), committed[0].Offset)
}
