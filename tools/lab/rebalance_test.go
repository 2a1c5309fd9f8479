package lab

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestLabRebalance pins the chapter's rebalance lab over the wire: the
// four steps and the chapter's assignment lines.
func TestLabRebalance(t *testing.T) {
	t.Parallel()
	runGolden(t, "rebalance")
	out := golden(t, "rebalance")
	for _, line := range []string{
		"  member 1: orders-0, orders-1, orders-2, orders-3\n",
		"  member 2: orders-1, orders-3\n",
		"  member 1 local view before refresh: orders-0, orders-1, orders-2, orders-3\n",
		"  member 1: orders-0, orders-2\n",
		"  partitions both members believe they own after the refresh: none\n",
	} {
		require.Contains(t, out, line)
	}
	require.Equal(t, "orders-0, orders-1, orders-2, orders-3", lastStepMember1(out), "after member 2 leaves")
}
