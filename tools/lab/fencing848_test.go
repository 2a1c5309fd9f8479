package lab

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestLabFencing848 pins the fencing exercises over the consumer protocol:
// in the window, a commit at the member's current epoch of partitions the
// new target moved away is REBALANCE_IN_PROGRESS and stores nothing; a
// heartbeat at the previous epoch is FENCED_MEMBER_EPOCH and a commit at
// it STALE_MEMBER_EPOCH; the re-join at epoch 0 under the same id is a
// refresh at the current group epoch, after which every owner commits.
func TestLabFencing848(t *testing.T) {
	t.Parallel()
	runGolden(t, "fencing-848")
	out := golden(t, "fencing-848")
	for _, line := range []string{
		"  < OffsetCommit v9 orders-0=REBALANCE_IN_PROGRESS orders-1=REBALANCE_IN_PROGRESS orders-2=REBALANCE_IN_PROGRESS orders-3=REBALANCE_IN_PROGRESS\n",
		"  < OffsetFetch v8 NONE orders-0=-1 orders-1=-1 orders-2=-1 orders-3=-1\n",
		"  > ConsumerGroupHeartbeat v1 member=member-1 epoch=1 owned=orders-0,orders-2\n  < ConsumerGroupHeartbeat v1 FENCED_MEMBER_EPOCH\n",
		"  < OffsetCommit v9 orders-0=STALE_MEMBER_EPOCH\n",
		"  > ConsumerGroupHeartbeat v1 member=member-1 epoch=0 topics=orders assignor=uniform\n  < ConsumerGroupHeartbeat v1 NONE epoch=2 assignment=orders-0,orders-2\n",
		"  < OffsetFetch v8 NONE orders-0=20 orders-1=21 orders-2=22 orders-3=23\n",
	} {
		require.Contains(t, out, line)
	}
}
