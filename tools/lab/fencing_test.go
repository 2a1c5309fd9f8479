package lab

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestLabFencing pins exercises 2 and 4 over the wire: a stale-generation
// commit is ILLEGAL_GENERATION and stores nothing, the commit after a
// refresh is stored, and a current member's commit of another member's
// partition is rejected whole.
func TestLabFencing(t *testing.T) {
	t.Parallel()
	runGolden(t, "fencing")
	out := golden(t, "fencing")
	require.Contains(t, out, "orders-0=ILLEGAL_GENERATION orders-1=ILLEGAL_GENERATION orders-2=ILLEGAL_GENERATION orders-3=ILLEGAL_GENERATION\n")
	require.Contains(t, out, "  < OffsetCommit v9 orders-0=NONE orders-2=NONE\n")
	require.Contains(t, out, "  < OffsetCommit v9 orders-0=REBALANCE_IN_PROGRESS orders-1=REBALANCE_IN_PROGRESS\n")
	require.Contains(t, out, "  < OffsetFetch v8 NONE orders-0=10 orders-1=-1\n")
}
