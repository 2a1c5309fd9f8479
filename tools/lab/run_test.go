package lab

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/minibroker/minibroker/broker"
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
// that outlives them, as --broker does: each run uses its own group, so the
// second run is not disturbed by the first, and topic orders is created
// when the broker lacks it. The record labs run once each: each creates a
// topic of one partition named like its group, and ends its members'
// sessions by waiting for the broker's expiry step on the real clock.
func TestLabAgainstRunningBroker(t *testing.T) {
	t.Parallel()
	b, err := broker.Start(context.Background(), broker.Config{}) // outlives each lab's 10 s context
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, b.Close()) })
	wire := []string{"rebalance", "fencing", "rebalance-848", "fencing-848"}
	for _, name := range append(append(wire, wire...), "replay", "zombie", "exactly-once") {
		var out bytes.Buffer
		require.NoError(t, Run(testContext(t), name, &out, b.Addr()), "lab %s:\n%s", name, out.String())
		require.Contains(t, out.String(), "group "+Group(name)+"-")
		if recordLab(name) {
			require.Contains(t, out.String(), "expiry step (the broker's own): removed a-")
		}
	}
	counts := b.Catalog().Counts()
	require.Equal(t, int32(4), counts["orders"])
	delete(counts, "orders")
	require.Len(t, counts, 4, "one topic per record lab run, and exactly-once's output")
	for name, n := range counts {
		require.Regexp(t, `^lab-(replay|zombie|exactly-once)-[0-9a-z]+(-out)?$`, name)
		want := int32(1)
		if strings.HasSuffix(name, "-out") {
			want = 2
		}
		require.Equal(t, want, n, name)
	}
	for _, g := range b.Coordinator().Groups() {
		require.Equal(t, "Empty", g.State.String(), "group %s: every lab member leaves or expires by the end", g.Group)
	}
}
