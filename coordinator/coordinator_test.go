package coordinator

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/minibroker/minibroker/clock"
)

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	manual := clock.NewManual(time.UnixMilli(0))
	cases := []struct {
		name string
		cfg  Config
		want string
	}{
		{"no clock", Config{}, "Clock is required"},
		{"negative bound", Config{Clock: manual, Settings: Settings{MinSessionTimeout: -1}}, "coordinator: MinSessionTimeout (-1ns) must be positive and at most MaxSessionTimeout (30m0s)"},
		{"min above max", Config{Clock: manual, Settings: Settings{MinSessionTimeout: time.Hour, MaxSessionTimeout: time.Minute}}, "MinSessionTimeout (1h0m0s) must be positive and at most MaxSessionTimeout (1m0s)"},
		{"min above default max", Config{Clock: manual, Settings: Settings{MinSessionTimeout: time.Hour}}, "MinSessionTimeout (1h0m0s) must be positive and at most MaxSessionTimeout (30m0s)"},
		{"negative consumer session", Config{Clock: manual, Settings: Settings{ConsumerSessionTimeout: -1}}, "ConsumerHeartbeatInterval (5s) must be positive and below ConsumerSessionTimeout (-1ns)"},
		{"consumer heartbeat as long as the session", Config{Clock: manual, Settings: Settings{ConsumerSessionTimeout: time.Second, ConsumerHeartbeatInterval: time.Second}}, "ConsumerHeartbeatInterval (1s) must be positive and below ConsumerSessionTimeout (1s)"},
		{"consumer heartbeat above the default session", Config{Clock: manual, Settings: Settings{ConsumerHeartbeatInterval: time.Minute}}, "ConsumerHeartbeatInterval (1m0s) must be positive and below ConsumerSessionTimeout (45s)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := New(tc.cfg)
			require.ErrorContains(t, err, tc.want)
		})
	}
}

func TestNewDefaults(t *testing.T) {
	t.Parallel()
	c, err := New(Config{Clock: clock.System{}})
	require.NoError(t, err)
	require.Equal(t, DefaultMinSessionTimeout, c.minSession)
	require.Equal(t, DefaultMaxSessionTimeout, c.maxSession)
	require.Equal(t, 45*time.Second, c.consumerSession, "Kafka's group.consumer.session.timeout.ms")
	require.Equal(t, 5*time.Second, c.consumerInterval, "Kafka's group.consumer.heartbeat.interval.ms")
	require.ErrorIs(t, c.CommitDirect("g", entries("t-0")), ErrUnknownTopic, "the default catalog is empty")
	c, err = New(Config{Clock: clock.System{}, Topics: StaticTopics{"t": 1}})
	require.NoError(t, err)
	require.NoError(t, c.CommitDirect("g", entries("t-0")), "the default store is in memory")
	require.Len(t, c.Committed("g"), 1)
}

func TestMemberIDsSortInJoinOrder(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	var ids []string
	for range 12 {
		res, err := f.c.Join(wireJoin("g", "", roundrobin("orders")))
		require.ErrorIs(t, err, ErrMemberIDRequired)
		ids = append(ids, res.MemberID)
	}
	require.Equal(t, "kgo-000001", ids[0])
	require.Equal(t, "kgo-000012", ids[11])
	require.IsIncreasing(t, ids)
}

func TestContractClockNames(t *testing.T) {
	t.Parallel()
	var _ Clock = SystemClock{}
	m := NewManualClock(time.UnixMilli(5))
	var _ Clock = m
	_, err := m.Advance(-time.Millisecond)
	require.ErrorIs(t, err, clock.ErrBackwards)
	require.Equal(t, int64(5), m.Now().UnixMilli())
}
