package coordinator

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/minibroker/minibroker/assignor"
	"github.com/minibroker/minibroker/clock"
	"github.com/minibroker/minibroker/offsets"
)

// defaultSession is the session timeout of fixture joins that name none.
const defaultSession = 10 * time.Second

// scale is the unit of the short sessions of expiry scenarios.
const scale = time.Millisecond

// fixture is one coordinator on a manual clock that starts at Unix 0, with
// an in-memory store, and the chapter's orders(4) and payments(1) topics
// unless told otherwise.
type fixture struct {
	t     *testing.T
	c     *Coordinator
	clock *clock.Manual
	store *offsets.Memory
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	return newFixtureWith(t, Config{})
}

func newFixtureWith(t *testing.T, cfg Config) *fixture {
	t.Helper()
	f := &fixture{t: t, clock: clock.NewManual(time.UnixMilli(0)), store: offsets.NewMemory()}
	cfg.Clock = f.clock
	if cfg.Store == nil {
		cfg.Store = f.store
	}
	if cfg.Topics == nil {
		cfg.Topics = StaticTopics{"orders": 4, "payments": 1}
	}
	c, err := New(cfg)
	require.NoError(t, err)
	f.c = c
	return f
}

// join is the chapter's join with the default session timeout; it must
// succeed.
func (f *fixture) join(group, member string, topics ...string) JoinResult {
	f.t.Helper()
	return f.joinSession(group, member, defaultSession, topics...)
}

func (f *fixture) joinSession(group, member string, session time.Duration, topics ...string) JoinResult {
	f.t.Helper()
	res, err := f.c.Join(JoinRequest{Group: group, MemberID: member, SessionTimeout: session, Topics: topics})
	require.NoError(f.t, err)
	return res
}

// advance moves the clock forward by ms milliseconds.
func (f *fixture) advance(ms int) {
	f.t.Helper()
	_, err := f.clock.Advance(time.Duration(ms) * time.Millisecond)
	require.NoError(f.t, err)
}

// commit commits offset 10*(i+1) for each named partition.
func (f *fixture) commit(group, member string, generation int32, parts ...string) error {
	f.t.Helper()
	return f.c.Commit(group, member, generation, entries(parts...))
}

// state returns the group's state and generation.
func (f *fixture) state(group string) (State, int32) {
	f.t.Helper()
	v, _ := f.c.Describe(group)
	return v.State, v.Generation
}

// entries turns "topic-partition" names into commits of 10, 20, 30...
func entries(parts ...string) []offsets.Entry {
	out := make([]offsets.Entry, len(parts))
	for i, tp := range tps(parts...) {
		out[i] = offsets.Entry{Topic: tp.Topic, Partition: tp.Partition, Offset: int64(10 * (i + 1)), LeaderEpoch: offsets.NoLeaderEpoch}
	}
	return out
}

// tps parses "topic-partition" names.
func tps(parts ...string) []assignor.TopicPartition {
	out := make([]assignor.TopicPartition, len(parts))
	for i, s := range parts {
		cut := strings.LastIndexByte(s, '-')
		p, err := strconv.Atoi(s[cut+1:])
		if err != nil {
			panic(fmt.Sprintf("bad partition name %q", s))
		}
		out[i] = assignor.TopicPartition{Topic: s[:cut], Partition: int32(p)}
	}
	return out
}

// names renders partitions as the chapter prints them.
func names(parts []assignor.TopicPartition) []string {
	out := make([]string, len(parts))
	for i, tp := range parts {
		out[i] = tp.String()
	}
	return out
}

// consumerJoin is a ConsumerGroupHeartbeat v1 join (epoch 0, the client's
// own member id) subscribing to topics; it must succeed.
func (f *fixture) consumerJoin(group, member string, topics ...string) ConsumerHeartbeatResult {
	f.t.Helper()
	res, err := f.c.ConsumerHeartbeat(consumerReq(group, member, JoinEpoch, topics...))
	require.NoError(f.t, err)
	return res
}

// consumerBeat is a heartbeat that repeats nothing (kgo's keepalive).
func (f *fixture) consumerBeat(group, member string, epoch int32) (ConsumerHeartbeatResult, error) {
	f.t.Helper()
	return f.c.ConsumerHeartbeat(ConsumerHeartbeatRequest{Group: group, MemberID: member, MemberEpoch: epoch, ClientID: "kgo", ClientHost: "127.0.0.1"})
}

// consumerReq is a full ConsumerGroupHeartbeat: subscription and assignor
// set (empty topics subscribe to nothing).
func consumerReq(group, member string, epoch int32, topics ...string) ConsumerHeartbeatRequest {
	return ConsumerHeartbeatRequest{Group: group, MemberID: member, MemberEpoch: epoch, ClientID: "kgo", ClientHost: "127.0.0.1",
		Topics: append([]string{}, topics...), Assignor: ptr(UniformAssignor)}
}

// member returns one member of a group's view; it must exist.
func (f *fixture) member(group, id string) MemberView {
	f.t.Helper()
	v, ok := f.c.Describe(group)
	require.True(f.t, ok)
	for _, m := range v.Members {
		if m.MemberID == id {
			return m
		}
	}
	f.t.Fatalf("no member %q in group %q", id, group)
	return MemberView{}
}

func ptr[T any](v T) *T { return &v }

// retentionFixture is a fixture with offsets retention of ms
// milliseconds, its clock moved to 1000 ms so that commits carry a
// commit time, and every group deletion recorded in deleted.
func retentionFixture(t *testing.T, ms int, cfg Config) (*fixture, *[]string) {
	t.Helper()
	var mu sync.Mutex
	deleted := &[]string{}
	cfg.OffsetsRetention = time.Duration(ms) * time.Millisecond
	cfg.OnGroupDeleted = func(g string) {
		mu.Lock()
		defer mu.Unlock()
		*deleted = append(*deleted, g)
	}
	f := newFixtureWith(t, cfg)
	f.advance(1000)
	return f, deleted
}

// failingStore is an in-memory store whose commits (when failCommits is
// set) or removals (when failRemovals is set) fail as a full disk does:
// offsets.ErrStorage, and nothing changes.
type failingStore struct {
	*offsets.Memory
	failCommits, failRemovals bool
}

func (s *failingStore) fail() func() error {
	return func() error { return fmt.Errorf("%w: disk full", offsets.ErrStorage) }
}

func (s *failingStore) Enqueue(group string, es []offsets.Entry) func() error {
	if s.failCommits {
		return s.fail()
	}
	return s.Memory.Enqueue(group, es)
}

func (s *failingStore) Delete(group string) func() error {
	if s.failRemovals {
		return s.fail()
	}
	return s.Memory.Delete(group)
}

func (s *failingStore) DeleteOffsets(group string, keys []offsets.Key) func() error {
	if s.failRemovals {
		return s.fail()
	}
	return s.Memory.DeleteOffsets(group, keys)
}

func (s *failingStore) Expire(group string, cutoff time.Time) func() error {
	if s.failRemovals {
		return s.fail()
	}
	return s.Memory.Expire(group, cutoff)
}

// keys parses "topic-partition" names into offsets keys.
func keys(parts ...string) []offsets.Key {
	out := make([]offsets.Key, 0, len(parts))
	for _, tp := range tps(parts...) {
		out = append(out, offsets.Key{Topic: tp.Topic, Partition: tp.Partition})
	}
	return out
}

// listed reports whether Groups lists group.
func (f *fixture) listed(group string) bool {
	f.t.Helper()
	for _, l := range f.c.Groups() {
		if l.Group == group {
			return true
		}
	}
	return false
}

// staticJoin is a JoinGroup v5+ of a static member: wireJoin with a group
// instance id.
func staticJoin(group, member, instance string, protocols ...Protocol) JoinRequest {
	req := wireJoin(group, member, protocols...)
	req.InstanceID = instance
	return req
}

// mustJoin runs a join that must succeed.
func (f *fixture) mustJoin(req JoinRequest) JoinResult {
	f.t.Helper()
	res, err := f.c.Join(req)
	require.NoError(f.t, err)
	return res
}

// recordRebalances records every report of the fixture's coordinator.
func recordRebalances(t *testing.T, cfg Config) (*fixture, func() []Rebalance) {
	t.Helper()
	var mu sync.Mutex
	var seen []Rebalance
	cfg.OnRebalance = func(r Rebalance) {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, r)
	}
	f := newFixtureWith(t, cfg)
	return f, func() []Rebalance {
		mu.Lock()
		defer mu.Unlock()
		return append([]Rebalance{}, seen...)
	}
}

// staticConsumerJoin is consumerJoin for a static member of instance.
func (f *fixture) staticConsumerJoin(group, member, instance string, topics ...string) (ConsumerHeartbeatResult, error) {
	f.t.Helper()
	req := consumerReq(group, member, JoinEpoch, topics...)
	req.InstanceID = instance
	return f.c.ConsumerHeartbeat(req)
}

// staticConsumerBeat is a keepalive naming instance, at epoch (or
// StaticLeaveEpoch, a static member's temporary leave).
func (f *fixture) staticConsumerBeat(group, member, instance string, epoch int32) (ConsumerHeartbeatResult, error) {
	f.t.Helper()
	return f.c.ConsumerHeartbeat(ConsumerHeartbeatRequest{Group: group, MemberID: member, InstanceID: instance, MemberEpoch: epoch, ClientID: "kgo"})
}
