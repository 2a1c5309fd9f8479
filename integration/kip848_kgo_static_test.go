package integration

import (
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/minibroker/minibroker/coordinator"
)

// TestK848KgoStaticMemberRestartKeepsPartitionsAtTheSameEpoch: over the
// consumer protocol, a kgo consumer with kgo.InstanceID closes (its leave
// is epoch -2, a temporary one) and a new client with the same instance id
// takes its place over: a new member id, the same partitions, no new group
// epoch, and the other member's assignment never moves.
func TestK848KgoStaticMemberRestartKeepsPartitionsAtTheSameEpoch(t *testing.T) {
	t.Parallel()
	b := startBroker(t, k848RealClock)
	first := k848NewStaticMember(t, b, "g", "app", "app-1", kgo.RangeBalancer(), "orders")
	other := k848NewMember(t, b, "g", "other", kgo.RangeBalancer(), "orders")
	v := k848AwaitConverged(t, b, "g", first, other)
	epoch := v.Generation
	owned, otherOwned := first.assigned(), other.assigned()
	require.Equal(t, map[string][]int32{"orders": {0, 1}}, owned, "range: the static member sorts first")
	oldID, _ := first.cl.GroupMetadata()

	first.cl.Close()
	away, _ := b.Coordinator().Describe("g")
	require.Len(t, away.Members, 2, "a static member's leave is temporary")
	i := slices.IndexFunc(away.Members, func(m coordinator.MemberView) bool { return m.MemberID == oldID })
	require.GreaterOrEqual(t, i, 0)
	require.Equal(t, int32(-2), away.Members[i].MemberEpoch)
	require.Equal(t, epoch, away.Generation)

	second := k848NewStaticMember(t, b, "g", "app", "app-1", kgo.RangeBalancer(), "orders")
	eventually(t, func() bool {
		id, e := second.cl.GroupMetadata()
		return id != "" && id != oldID && e == epoch && maps.EqualFunc(second.assigned(), owned, slices.Equal)
	}, fmt.Sprintf("the restart never took %v back at epoch %d", owned, epoch))
	now := k848AwaitConverged(t, b, "g", second, other)
	require.Equal(t, epoch, now.Generation, "no new group epoch")
	require.Equal(t, otherOwned, other.assigned(), "the other member's assignment never moved")
	_, otherEpoch := other.cl.GroupMetadata()
	require.Equal(t, epoch, otherEpoch)
}
