package integration

import (
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/minibroker/minibroker/internal/testutil"
)

// TestKgoStaticMemberRestartKeepsPartitionsAtTheSameGeneration: a kgo
// consumer with kgo.InstanceID closes (a static member does not leave) and
// a new client with the same instance id starts: it gets a new member id
// and the same partitions at the same generation, and the other member's
// assignment never moves (no callback, no new generation).
func TestKgoStaticMemberRestartKeepsPartitionsAtTheSameGeneration(t *testing.T) {
	t.Parallel()
	b := startBroker(t, kgoConfig(map[string]int32{"orders": 4}))
	cfg := kgoMemberConfig{Group: "g", Topics: []string{"orders"}, InstanceID: "app-1", SessionTimeout: 10 * time.Second}
	first := newKgoMember(t, b, "app", cfg)
	other := newKgoMember(t, b, "other", kgoMemberConfig{Group: "g", Topics: []string{"orders"}})
	gen := waitKgoConverged(t, b, "g", "orders", 4, first, other)
	owned, otherOwned := first.Owned(), other.Owned()
	require.Equal(t, map[string][]int32{"orders": {0, 2}}, owned, "the static member sorts first")
	otherEvents := len(other.Events())
	oldID := first.MemberID()

	first.Close()
	mv, ok := b.member("g", oldID)
	require.True(t, ok, "a static member that closes does not leave")
	require.Len(t, mv.Assignment, 2)

	second := newKgoMember(t, b, "app", cfg)
	testutil.Eventually(t, kgoWait, func() string {
		if id := second.MemberID(); id == "" || id == oldID {
			return "not joined yet"
		}
		if got := second.Owned(); !maps.EqualFunc(got, owned, slices.Equal) {
			return fmt.Sprintf("the restart owns %v, want %v", got, owned)
		}
		return ""
	})
	require.Equal(t, gen, second.Generation(), "a restart is no new generation")
	require.Equal(t, gen, b.describe("g").Generation)
	require.Equal(t, otherOwned, other.Owned())
	require.Len(t, other.Events(), otherEvents, "the other member saw nothing")
	require.Equal(t, gen, other.Generation())
	_, ok = b.member("g", oldID)
	require.False(t, ok, "the old member id was replaced")
	mv, ok = b.member("g", second.MemberID())
	require.True(t, ok)
	require.Equal(t, "app-1", mv.InstanceID)
}
