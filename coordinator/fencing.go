package coordinator

import "errors"

// fencingReasons name why the coordinator turned a member away: each
// fencing sentinel and its reason in words, checked in order with
// errors.Is (an ownership rejection is named before the generation that
// may come with it).
var fencingReasons = [...]struct {
	err    error
	reason string
}{
	{ErrFencedInstanceID, "replaced instance"},
	{ErrNotPartitionOwner, "not the owner"},
	{ErrIllegalGeneration, "stale generation"},
	{ErrFencedMemberEpoch, "stale member epoch"},
	{ErrStaleMemberEpoch, "stale member epoch"},
	{ErrUnknownMemberID, "unknown member"},
	{ErrRebalanceInProgress, "group rebalancing"},
}

// FencingReason says why err turned a member away, for the log, the
// metrics and the live page: "stale generation", "unknown member", "not
// the owner", "group rebalancing", "stale member epoch" or "replaced
// instance". It returns "" when err (nil included) is no fencing
// rejection.
func FencingReason(err error) string {
	if err == nil {
		return ""
	}
	for _, f := range fencingReasons {
		if errors.Is(err, f.err) {
			return f.reason
		}
	}
	return ""
}
