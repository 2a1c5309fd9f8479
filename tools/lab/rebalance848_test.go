package lab

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestLabRebalance848 pins the rebalance lab over the consumer protocol:
// member 2's join hands it orders-1 and orders-3 at once while member 1
// still believes it owns all four (the window without a revocation step),
// member 1's heartbeat hands it its whole new assignment, and after member
// 2 leaves member 1's next heartbeat gives it every partition.
func TestLabRebalance848(t *testing.T) {
	t.Parallel()
	runGolden(t, "rebalance-848")
	out := golden(t, "rebalance-848")
	for _, line := range []string{
		"  < ConsumerGroupHeartbeat v1 NONE epoch=2 assignment=orders-1,orders-3\n",
		"  member 1 local view before its heartbeat: orders-0, orders-1, orders-2, orders-3 (epoch 1)\n",
		"  partitions both members believe they own: orders-1, orders-3\n",
		"      member-1 epoch=1 current=orders-0,orders-2 target=orders-0,orders-2\n",
		"  < ConsumerGroupHeartbeat v1 NONE epoch=2 assignment=orders-0,orders-2\n",
		"  partitions both members believe they own: (none)\n",
	} {
		require.Contains(t, out, line)
	}
	require.Equal(t, "orders-0, orders-1, orders-2, orders-3 (epoch 3)", lastStepMember1(out), "after member 2 leaves")
	require.NotContains(t, out, "JoinGroup", "the consumer protocol only")
	require.Equal(t, 1, strings.Count(out, "epoch=-1 (leave)"))
}
