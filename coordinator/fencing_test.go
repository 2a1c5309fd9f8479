package coordinator

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestFencingReason names each fencing sentinel, wrapped as the
// coordinator returns them, and nothing else; an ownership rejection
// that also names a stale generation is "not the owner".
func TestFencingReason(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		err  error
		want string
	}{
		{ErrFencedInstanceID, "replaced instance"},
		{ErrNotPartitionOwner, "not the owner"},
		{ErrIllegalGeneration, "stale generation"},
		{ErrFencedMemberEpoch, "stale member epoch"},
		{ErrStaleMemberEpoch, "stale member epoch"},
		{ErrUnknownMemberID, "unknown member"},
		{ErrRebalanceInProgress, "group rebalancing"},
		{fmt.Errorf("%w: generation 1, group is at 2", ErrIllegalGeneration), "stale generation"},
		{fmt.Errorf("%w (%w)", ErrNotPartitionOwner, ErrIllegalGeneration), "not the owner"},
		{ErrUnknownGroup, ""},
		{ErrUnknownTopic, ""},
		{errors.New("disk full"), ""},
		{nil, ""},
	} {
		require.Equal(t, tc.want, FencingReason(tc.err), "%v", tc.err)
	}
}
