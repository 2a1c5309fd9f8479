package coordinator

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/minibroker/minibroker/catalog"
	"github.com/minibroker/minibroker/clock"
	"github.com/minibroker/minibroker/offsets"
)

func TestLimitsConfigValidate(t *testing.T) {
	t.Parallel()
	clk := clock.NewManual(time.UnixMilli(0))
	cases := []struct {
		name string
		cfg  Config
		want string
	}{
		{"negative group size", Config{Clock: clk, Settings: Settings{MaxGroupSize: -1}}, "coordinator: MaxGroupSize must be at least 1, got -1"},
		{"negative group count", Config{Clock: clk, Settings: Settings{MaxGroups: -1}}, "coordinator: MaxGroups must be at least 1, got -1"},
		{"negative metadata", Config{Clock: clk, Settings: Settings{MaxMetadataBytes: -1}}, "MaxMetadataBytes must be between 1 and 4096, got -1"},
		{"metadata above the store's", Config{Clock: clk, Settings: Settings{MaxMetadataBytes: offsets.MaxMetadataBytes + 1}}, "MaxMetadataBytes must be between 1 and 4096, got 4097"},
		{"negative id bytes", Config{Clock: clk, Settings: Settings{MaxIDBytes: -1}}, "MaxIDBytes must be between 1 and 32735, got -1"},
		{"id bytes beyond the protocol", Config{Clock: clk, Settings: Settings{MaxIDBytes: MaxIDBytesLimit + 1}}, "MaxIDBytes must be between 1 and 32735, got 32736"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := New(tc.cfg)
			require.ErrorContains(t, err, tc.want)
		})
	}
	c, err := New(Config{Clock: clk})
	require.NoError(t, err)
	require.Equal(t, DefaultMaxGroupSize, c.maxGroupSize)
	require.Equal(t, DefaultMaxGroups, c.maxGroups)
	require.Equal(t, offsets.MaxMetadataBytes, c.maxMetadata)
	require.Equal(t, DefaultMaxIDBytes, c.maxIDBytes)
}

// TestConfiguredIDLimit: Config.MaxIDBytes bounds group and client ids,
// and member ids MemberIDSlackBytes beyond it.
func TestConfiguredIDLimit(t *testing.T) {
	t.Parallel()
	f := newFixtureWith(t, Config{Settings: Settings{MaxIDBytes: 8}})
	ok := strings.Repeat("x", 8)
	over := strings.Repeat("x", 9)
	_, err := f.c.Join(JoinRequest{Group: over, MemberID: "a", SessionTimeout: time.Second, Topics: []string{"orders"}})
	require.ErrorIs(t, err, ErrInvalidGroupID)
	_, err = f.c.Join(JoinRequest{Group: ok, MemberID: "a", ClientID: over, SessionTimeout: time.Second, Topics: []string{"orders"}})
	require.ErrorIs(t, err, ErrInvalidClientID)
	_, err = f.c.Join(JoinRequest{Group: ok, MemberID: strings.Repeat("m", 8+MemberIDSlackBytes+1), SessionTimeout: time.Second, Topics: []string{"orders"}})
	require.ErrorIs(t, err, ErrInvalidMemberID)
	res, err := f.c.Join(JoinRequest{Group: ok, MemberID: strings.Repeat("m", 8+MemberIDSlackBytes), ClientID: ok, SessionTimeout: time.Second, Topics: []string{"orders"}})
	require.NoError(t, err)
	require.NoError(t, f.c.Heartbeat(ok, res.MemberID, res.Generation))
	require.ErrorIs(t, f.c.ValidateGroupID(over), ErrInvalidGroupID)
	require.NoError(t, f.c.ValidateGroupID(ok))
}

// TestGroupMaxSizeCountsMembersAndPendingIDs: with room for two, a third
// member is refused whichever way it comes (a chapter join, a v0-3 wire
// join, a KIP-394 request for an id), while members re-join freely and a
// pending id takes the place it already holds.
func TestGroupMaxSizeCountsMembersAndPendingIDs(t *testing.T) {
	t.Parallel()
	f := newFixtureWith(t, Config{Settings: Settings{MaxGroupSize: 2}})
	f.join("g", "a", "orders")
	f.join("g", "b", "orders")

	_, err := f.c.Join(JoinRequest{Group: "g", MemberID: "c", SessionTimeout: time.Second, Topics: []string{"orders"}})
	require.ErrorIs(t, err, ErrGroupMaxSizeReached)
	old := wireJoin("g", "", roundrobin("orders"))
	old.RequireMemberID = false
	_, err = f.c.Join(old)
	require.ErrorIs(t, err, ErrGroupMaxSizeReached)
	_, err = f.c.Join(wireJoin("g", "", roundrobin("orders")))
	require.ErrorIs(t, err, ErrGroupMaxSizeReached)
	_, gen := f.state("g")
	require.Equal(t, int32(2), gen, "a refused join changes nothing")

	res := f.join("g", "a", "orders", "payments")
	require.Equal(t, int32(3), res.Generation, "a member's re-join is not a new member")

	f.c.Leave("g", "b")
	first, err := f.c.Join(wireJoin("g", "", roundrobin("orders")))
	require.ErrorIs(t, err, ErrMemberIDRequired, "the freed place goes to a pending id")
	_, err = f.c.Join(wireJoin("g", "", roundrobin("orders")))
	require.ErrorIs(t, err, ErrGroupMaxSizeReached, "the pending id holds its place")
	_, err = f.c.Join(wireJoin("g", first.MemberID, roundrobin("orders")))
	require.NoError(t, err, "the pending id joins into the place it holds")
}

// TestMaxGroupsCountsJoinedAndCommittedGroups: groups known by a join, by
// a direct commit or by offsets already in the store all count; a known
// group is never refused.
func TestMaxGroupsCountsJoinedAndCommittedGroups(t *testing.T) {
	t.Parallel()
	store := offsets.NewMemory()
	require.NoError(t, store.Commit("stored", entries("orders-0")))
	f := newFixtureWith(t, Config{Settings: Settings{MaxGroups: 3}, Store: store})
	f.join("joined", "a", "orders")
	_, err := f.c.Join(wireJoin("pending", "", roundrobin("orders")))
	require.ErrorIs(t, err, ErrMemberIDRequired, "a pending id makes a group")

	_, err = f.c.Join(JoinRequest{Group: "fourth", MemberID: "a", SessionTimeout: time.Second, Topics: []string{"orders"}})
	require.ErrorIs(t, err, ErrTooManyGroups)
	require.ErrorIs(t, f.c.CommitDirect("fourth", entries("orders-0")), ErrTooManyGroups)
	require.Empty(t, f.c.Committed("fourth"))
	_, ok := f.c.Describe("fourth")
	require.False(t, ok, "a refused group is not created")

	require.NoError(t, f.c.CommitDirect("stored", entries("orders-1")), "known by its offsets")
	require.NoError(t, f.c.CommitDirect("joined", entries("orders-1")))
	f.join("stored", "a", "orders")
	require.NoError(t, f.c.CommitDirect("fourth", nil), "an empty commit creates nothing, so it is not refused")
}

// TestDirectCommitAdmitsGroupOnlyWhenValid: a direct commit that fails its
// own checks takes no place among the groups.
func TestDirectCommitAdmitsGroupOnlyWhenValid(t *testing.T) {
	t.Parallel()
	f := newFixtureWith(t, Config{Settings: Settings{MaxGroups: 1}})
	require.ErrorIs(t, f.c.CommitDirect("a", entries("nope-0")), ErrUnknownTopic)
	require.ErrorIs(t, f.c.CommitDirect("a", []offsets.Entry{{Topic: "orders", Offset: -3}}), offsets.ErrNegativeOffset)
	require.NoError(t, f.c.CommitDirect("b", entries("orders-0")))
	require.ErrorIs(t, f.c.CommitDirect("a", entries("orders-0")), ErrTooManyGroups)
}

func TestIDLimits(t *testing.T) {
	t.Parallel()
	long := func(n int) string { return strings.Repeat("x", n) }
	join := func(group, member, client string) func(*fixture) error {
		return func(f *fixture) error {
			req := wireJoin(group, member, roundrobin("orders"))
			req.ClientID = client
			_, err := f.c.Join(req)
			return err
		}
	}
	heartbeat := func(group, member string) func(*fixture) error {
		return func(f *fixture) error { return f.c.Heartbeat(group, member, 1) }
	}
	sync := func(group, member string) func(*fixture) error {
		return func(f *fixture) error { _, err := f.c.Sync(group, member, 1, ""); return err }
	}
	commit := func(group, member string) func(*fixture) error {
		return func(f *fixture) error { return f.c.Commit(group, member, 1, entries("orders-0")) }
	}
	direct := func(group string) func(*fixture) error {
		return func(f *fixture) error { return f.c.CommitDirect(group, entries("orders-0")) }
	}
	cases := []struct {
		name string
		call func(*fixture) error
		want error
	}{
		{"join: group id at the limit", join(long(DefaultMaxIDBytes), "", "kgo"), ErrMemberIDRequired},
		{"join: group id too long", join(long(DefaultMaxIDBytes+1), "", "kgo"), ErrInvalidGroupID},
		{"join: group id not UTF-8", join("g\xff", "", "kgo"), ErrInvalidGroupID},
		{"join: group id with a newline", join("g\n", "", "kgo"), ErrInvalidGroupID},
		{"join: group id with DEL", join("g\x7f", "", "kgo"), ErrInvalidGroupID},
		{"join: group id with a C1 control", join("g\u0085", "", "kgo"), ErrInvalidGroupID},
		{"join: group id in another script", join("gruppe-\u00e4\u4e2d", "", "kgo"), ErrMemberIDRequired},
		{"join: client id at the limit", join("g", "", long(DefaultMaxIDBytes)), ErrMemberIDRequired},
		{"join: client id too long", join("g", "", long(DefaultMaxIDBytes+1)), ErrInvalidClientID},
		{"join: client id not UTF-8", join("g", "", "\xc3"), ErrInvalidClientID},
		{"join: member id too long", join("g", long(DefaultMaxIDBytes+MemberIDSlackBytes+1), "kgo"), ErrInvalidMemberID},
		{"join: member id with a tab", join("g", "a\tb", "kgo"), ErrInvalidMemberID},
		{"join: unknown member id at the limit", join("g", long(DefaultMaxIDBytes+MemberIDSlackBytes), "kgo"), ErrUnknownMemberID},
		{"heartbeat: empty group", heartbeat("", "a"), ErrInvalidGroupID},
		{"heartbeat: group too long", heartbeat(long(DefaultMaxIDBytes+1), "a"), ErrInvalidGroupID},
		{"heartbeat: member too long", heartbeat("g", long(DefaultMaxIDBytes+MemberIDSlackBytes+1)), ErrInvalidMemberID},
		{"heartbeat: unknown group", heartbeat("g", "a"), ErrUnknownMemberID},
		{"sync: empty group", sync("", "a"), ErrInvalidGroupID},
		{"sync: member not UTF-8", sync("g", "\xff"), ErrInvalidMemberID},
		{"commit: empty group is allowed", commit("", "a"), ErrUnknownMemberID},
		{"commit: group too long", commit(long(DefaultMaxIDBytes+1), "a"), ErrInvalidGroupID},
		{"commit: member too long", commit("g", long(DefaultMaxIDBytes+MemberIDSlackBytes+1)), ErrInvalidMemberID},
		{"direct commit: empty group is allowed", direct(""), nil},
		{"direct commit: group not UTF-8", direct("\xff"), ErrInvalidGroupID},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			err := tc.call(f)
			if tc.want == nil {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, tc.want)
		})
	}
}

// TestValidText: printable ASCII, and UTF-8 text after it, is text; a C0
// control, DEL, a C1 control or a byte that is not UTF-8 anywhere in the
// id is not. The ASCII pass answers as the rune-by-rune rule does for
// every string of up to two bytes, alone and after an ASCII prefix.
func TestValidText(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		id   string
		want bool
	}{
		{"", true},
		{"kgo-000001", true},
		{"~ !", true},
		{"gruppe-\u00e4\u4e2d", true},
		{"\u00e4-after", true},
		{"a\x00", false},
		{"\x1fa", false},
		{"a\x7f", false},
		{"a\u0085", false},
		{"a\u00e4\n", false},
		{"a\xff", false},
		{"a\xc3", false},
		{"a\xed\xa0\x80", false}, // a surrogate half
	} {
		require.Equal(t, tc.want, validText(tc.id), "%q", tc.id)
	}
	for _, prefix := range []string{"", "member-"} {
		for i := range 1 << 16 {
			for _, id := range []string{string([]byte{byte(i)}), string([]byte{byte(i >> 8), byte(i)})} {
				if validText(prefix+id) != validUTF8Text(prefix+id) {
					t.Fatalf("validText(%q) = %v, the rune-by-rune rule says %v", prefix+id, validText(prefix+id), validUTF8Text(prefix+id))
				}
			}
		}
	}
}

// TestJoinSubscriptionToInvalidTopicName: a name Kafka would refuse as a
// topic is INVALID_TOPIC_EXCEPTION's error, not merely unknown.
func TestJoinSubscriptionToInvalidTopicName(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	_, err := f.c.Join(JoinRequest{Group: "g", MemberID: "a", SessionTimeout: time.Second, Topics: []string{"bad name"}})
	require.ErrorIs(t, err, catalog.ErrInvalidTopic)
	_, err = f.c.Join(wireJoin("g", "", roundrobin(strings.Repeat("t", 250))))
	require.ErrorIs(t, err, catalog.ErrInvalidTopic)
	_, err = f.c.Join(JoinRequest{Group: "g", MemberID: "a", SessionTimeout: time.Second, Topics: []string{"valid-but-absent"}})
	require.ErrorIs(t, err, ErrUnknownTopic)
}

func TestMaxMetadataBytes(t *testing.T) {
	t.Parallel()
	f := newFixtureWith(t, Config{Settings: Settings{MaxMetadataBytes: 8}})
	res := f.join("g", "a", "orders")
	at := []offsets.Entry{{Topic: "orders", Partition: 0, Offset: 1, Metadata: "12345678"}}
	over := []offsets.Entry{{Topic: "orders", Partition: 0, Offset: 2, Metadata: "123456789"}}
	require.NoError(t, f.c.Commit("g", "a", res.Generation, at))
	require.ErrorIs(t, f.c.Commit("g", "a", res.Generation, over), offsets.ErrMetadataTooLarge)
	require.ErrorIs(t, f.c.CommitDirect("m", over), offsets.ErrMetadataTooLarge)
	neg := append([]offsets.Entry{{Topic: "orders", Partition: 1, Offset: -3}}, over...)
	require.ErrorIs(t, f.c.CommitDirect("m", neg), offsets.ErrNegativeOffset, "the store's checks come first")
	require.Equal(t, int64(1), f.c.Committed("g")[0].Offset)
}
