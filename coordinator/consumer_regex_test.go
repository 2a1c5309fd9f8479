package coordinator

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// regexJoin is a ConsumerGroupHeartbeat join subscribing by pattern only.
func regexJoin(group, member, pattern string) ConsumerHeartbeatRequest {
	req := consumerReq(group, member, JoinEpoch)
	req.Topics, req.Regex = nil, &pattern
	return req
}

func TestConsumerRegexSubscriptionMatchesWholeNamesAndPicksUpNewTopics(t *testing.T) {
	t.Parallel()
	topics := StaticTopics{"orders": 2, "orders-eu": 1, "payments": 1}
	f, seen := recordRebalances(t, Config{Topics: topics})
	res, err := f.c.ConsumerHeartbeat(regexJoin("g", "a", "orders.*"))
	require.NoError(t, err)
	require.Equal(t, int32(1), res.MemberEpoch)
	require.Equal(t, []string{"orders-0", "orders-1", "orders-eu-0"}, names(res.Assignment))
	m := f.member("g", "a")
	require.Equal(t, "orders.*", m.Regex)
	require.Equal(t, []string{"orders", "orders-eu"}, m.Matched)
	require.Empty(t, m.Topics, "no names were sent")

	res, err = f.consumerBeat("g", "a", 1)
	require.NoError(t, err)
	require.False(t, res.Changed, "nothing new in the catalog")

	topics["orders-us"] = 1
	topics["xorders"] = 1 // a match anywhere is not a match: the whole name must match
	res, err = f.consumerBeat("g", "a", 1)
	require.NoError(t, err)
	require.True(t, res.Changed)
	require.Equal(t, int32(2), res.MemberEpoch, "a new matching topic is a new group epoch")
	require.Equal(t, []string{"orders-0", "orders-1", "orders-eu-0", "orders-us-0"}, names(res.Assignment))
	last := seen()[len(seen())-1]
	require.Equal(t, ReasonSubscription, last.Reason)
	require.Equal(t, int32(2), last.Generation)

	// The regex is dropped with "": the member subscribes to its names.
	req := consumerReq("g", "a", 2, "payments")
	req.Regex = ptr("")
	res, err = f.c.ConsumerHeartbeat(req)
	require.NoError(t, err)
	require.Equal(t, int32(3), res.MemberEpoch)
	require.Equal(t, []string{"payments-0"}, names(res.Assignment))
}

func TestConsumerRegexInvalidIsRefused(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	_, err := f.c.ConsumerHeartbeat(regexJoin("g", "a", "orders(["))
	require.ErrorIs(t, err, ErrInvalidRegularExpression)
	_, ok := f.c.Describe("g")
	require.False(t, ok, "no group was made")
	_, err = f.c.ConsumerHeartbeat(regexJoin("g", "a", `(?=x)`))
	require.ErrorIs(t, err, ErrInvalidRegularExpression, "RE2 has no lookahead")
}

func TestConsumerRegexMemberBesideNamedOne(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	_, err := f.c.ConsumerHeartbeat(regexJoin("g", "a", "pay.*"))
	require.NoError(t, err)
	res := f.consumerJoin("g", "b", "orders")
	require.Equal(t, []string{"orders-0", "orders-1", "orders-2", "orders-3"}, names(res.Assignment))
	require.Equal(t, []string{"payments-0"}, names(f.member("g", "a").TargetAssignment))
	v, _ := f.c.Describe("g")
	require.Equal(t, int32(2), v.Generation)
}
