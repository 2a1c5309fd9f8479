package lab

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/minibroker/minibroker/broker"
	"github.com/minibroker/minibroker/broker/adminapi"
)

// TestLabPartition pins the zombie a fault makes: A's heartbeats are
// dropped, the expiry step removes it, B takes both partitions at
// generation 3, both process r3 to r5, and A's commit is refused with
// ILLEGAL_GENERATION while B's is stored.
func TestLabPartition(t *testing.T) {
	t.Parallel()
	runGolden(t, "partition")
	out := golden(t, "partition")
	require.Contains(t, out, "  generation 2: A is a-000001 and owns lab-partition-0; B is b-000002 and owns lab-partition-1\n")
	require.Contains(t, out, "expiry step (in process): removed a-000001\n")
	require.Contains(t, out, "  generation 3: B owns lab-partition-0, lab-partition-1")
	require.Contains(t, out, "  3       r3     A, B\n  4       r4     A, B\n  5       r5     A, B\n")
	require.Contains(t, out, "  B commits lab-partition-0=6 (member b-000002, generation 3): NONE\n")
	require.Contains(t, out, "  A commits lab-partition-0=6 (member a-000001, generation 2): ILLEGAL_GENERATION: the fence refuses it\n")
}

// TestLabPartitionAgainstRunningBroker: against a broker in another
// process (here one started apart, on the real clock) the fault goes
// through its admin API and the lab waits for the broker's own expiry
// step; without the admin address it refuses to start.
func TestLabPartitionAgainstRunningBroker(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	b, err := broker.Start(ctx, broker.Config{Admin: "127.0.0.1:0", AdminAPI: adminapi.New})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, b.Close()) })
	require.ErrorIs(t, Run(ctx, "partition", &bytes.Buffer{}, b.Addr()), ErrNeedsAdmin)

	var out bytes.Buffer
	require.NoError(t, RunWith(ctx, "partition", &out, Options{Broker: b.Addr(), Admin: b.AdminAddr()}), out.String())
	require.Contains(t, out.String(), "the fault goes through its admin API")
	require.Contains(t, out.String(), "expiry step (the broker's own): removed a-")
	require.Contains(t, out.String(), ": ILLEGAL_GENERATION: the fence refuses it\n")
	require.Empty(t, b.Faults(), "the lab removed its fault")
	require.Regexp(t, `group lab-partition-[0-9a-z]+, topic lab-partition-[0-9a-z]+\n`, out.String())
}
