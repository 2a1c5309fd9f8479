package integration

// Helpers for the kgo, kadm and admin tests: the broker they start
// (kgoConfig, an adjust function of startBroker), kgo group
// members that record what their callbacks report, a dialer that can cut a
// client off the network (a crash, as the broker sees it), and polling
// with deadlines. The kgo helpers carry a kgo prefix so they never clash
// with the wire tests' helpers in helpers_test.go.

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/broker"
	"github.com/minibroker/minibroker/coordinator"
	"github.com/minibroker/minibroker/internal/testutil"
)

// Group timings for every kgo member in these tests: short enough that each
// test runs in seconds, long enough that a member never expires while it is
// alive, even under -race on two cores.
const (
	kgoSessionTimeout   = time.Second
	kgoHeartbeat        = 100 * time.Millisecond
	kgoRebalanceTimeout = 2 * time.Second
	kgoFetchMaxWait     = 100 * time.Millisecond
	// kgoRetryBackoff replaces kgo's default backoff (250 ms doubling to
	// 5 s per consecutive group error). minibroker fences every member
	// with ILLEGAL_GENERATION at its next heartbeat after any rebalance,
	// which kgo counts as a group error, and an eager member's count
	// never resets (consumer_group.go manage). With the default, a
	// member that has seen four rebalances backs off longer than a 1 s
	// session and expires while waiting to re-join.
	kgoRetryBackoff = 50 * time.Millisecond
	// kgoWait bounds every wait for the group to reach a state.
	kgoWait = 15 * time.Second
)

// kgoConfig is the broker of the kgo and kadm tests, as `minibroker
// serve` runs it: topics, a data dir, the real clock with the expiry step
// on a fast ticker, and a minimum session timeout below the tests' own.
// It is an adjust function of startBroker.
func kgoConfig(topics map[string]int32) func(*broker.Config) {
	return func(cfg *broker.Config) {
		cfg.Topics, cfg.ManualClock = topics, false
		cfg.ExpiryInterval, cfg.MinSessionTimeout = 20*time.Millisecond, 10*time.Millisecond
	}
}

// describe returns the coordinator's view of group.
func (b *testBroker) describe(group string) coordinator.GroupView {
	v, _ := b.Coordinator().Describe(group)
	return v
}

// member returns the coordinator's view of one member of group.
func (b *testBroker) member(group, memberID string) (coordinator.MemberView, bool) {
	for _, mv := range b.describe(group).Members {
		if mv.MemberID == memberID {
			return mv, true
		}
	}
	return coordinator.MemberView{}, false
}

// admin returns a kadm client for the broker, closed when the test ends.
func (b *testBroker) admin(t *testing.T) *kadm.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.ClientID("admin"), kgo.RetryBackoffFn(func(int) time.Duration { return kgoRetryBackoff }))
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	return kadm.NewClient(cl)
}

// kgoEvent is one OnPartitions callback as a member saw it.
type kgoEvent struct {
	Kind       string // "assigned", "revoked" or "lost"
	Partitions map[string][]int32
	Generation int32 // kgo's GroupMetadata generation during the callback
}

// kgoMember is one kgo group consumer and everything its callbacks and
// polls reported.
type kgoMember struct {
	Name   string
	Client *kgo.Client
	dialer *testutil.CutDialer

	mu          sync.Mutex
	owned       map[string][]int32 // guarded by mu: assigned minus revoked and lost
	events      []kgoEvent         // guarded by mu
	pollErrs    []error            // guarded by mu
	manageErrs  []error            // guarded by mu: HookGroupManageError
	heartbeats  int                // guarded by mu: Heartbeat round trips, HookBrokerE2E
	autoCommits []kgoCommitResult  // guarded by mu: AutoCommitCallback
	records     []string           // guarded by mu: "partition@offset:value" of each record polled

	// onLost, when set before the member joins, runs inside
	// OnPartitionsLost after the event is recorded.
	onLost func(map[string][]int32)

	pollDone chan struct{}
}

// kgoMemberConfig is what varies between members.
type kgoMemberConfig struct {
	Group    string
	Topics   []string
	Balancer kgo.GroupBalancer // default RoundRobinBalancer
	// AutoCommit enables kgo's autocommit at AutoCommitInterval (default
	// 100 ms); otherwise autocommit is disabled.
	AutoCommit         bool
	AutoCommitInterval time.Duration
	// OnLost, if set, runs inside OnPartitionsLost (see kgoMember.onLost).
	OnLost func(map[string][]int32)
	// SessionTimeout overrides kgoSessionTimeout.
	SessionTimeout time.Duration
	// Opts are more kgo options, applied after the others.
	Opts []kgo.Opt
	// InstanceID, when set, makes the member static (kgo.InstanceID).
	InstanceID string
}

// OnBrokerE2E implements kgo.HookBrokerE2E: it counts the member's
// Heartbeat round trips, whatever their error code.
func (m *kgoMember) OnBrokerE2E(_ kgo.BrokerMetadata, key int16, e2e kgo.BrokerE2E) {
	if kmsg.Key(key) != kmsg.Heartbeat || e2e.Err() != nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.heartbeats++
}

// Heartbeats returns how many Heartbeat round trips the member made.
func (m *kgoMember) Heartbeats() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.heartbeats
}

// kgoCommitResult is what one commit callback received.
type kgoCommitResult struct {
	Req  *kmsg.OffsetCommitRequest
	Resp *kmsg.OffsetCommitResponse
	Err  error
}

// OnGroupManageError implements kgo.HookGroupManageError: kgo calls it
// with the error that ended a group session (a heartbeat, join or sync
// error), just after OnPartitionsLost.
func (m *kgoMember) OnGroupManageError(err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.manageErrs = append(m.manageErrs, err)
}

// newKgoMember starts a kgo consumer named name (its client id, so its
// member id sorts by name) in cfg.Group and polls it until the test ends or
// the member is closed or killed.
func newKgoMember(t *testing.T, b *testBroker, name string, cfg kgoMemberConfig) *kgoMember {
	t.Helper()
	m := &kgoMember{Name: name, dialer: &testutil.CutDialer{}, owned: map[string][]int32{}, onLost: cfg.OnLost, pollDone: make(chan struct{})}
	balancer := cfg.Balancer
	if balancer == nil {
		balancer = kgo.RoundRobinBalancer()
	}
	session := cfg.SessionTimeout
	if session == 0 {
		session = kgoSessionTimeout
	}
	opts := []kgo.Opt{
		kgo.SeedBrokers(b.Addr()),
		kgo.ClientID(name),
		kgo.Dialer(m.dialer.DialContext),
		kgo.ConsumerGroup(cfg.Group),
		kgo.ConsumeTopics(cfg.Topics...),
		kgo.Balancers(balancer),
		kgo.SessionTimeout(session),
		kgo.WithHooks(m),
		kgo.HeartbeatInterval(kgoHeartbeat),
		kgo.RebalanceTimeout(kgoRebalanceTimeout),
		kgo.FetchMaxWait(kgoFetchMaxWait),
		kgo.RetryBackoffFn(func(int) time.Duration { return kgoRetryBackoff }),
		kgo.OnPartitionsAssigned(func(_ context.Context, cl *kgo.Client, ps map[string][]int32) {
			m.record("assigned", cl, ps)
		}),
		kgo.OnPartitionsRevoked(func(_ context.Context, cl *kgo.Client, ps map[string][]int32) {
			m.record("revoked", cl, ps)
		}),
		kgo.OnPartitionsLost(func(_ context.Context, cl *kgo.Client, ps map[string][]int32) {
			m.record("lost", cl, ps)
			if m.onLost != nil {
				m.onLost(ps)
			}
		}),
	}
	if cfg.InstanceID != "" {
		opts = append(opts, kgo.InstanceID(cfg.InstanceID))
	}
	if cfg.AutoCommit {
		interval := cfg.AutoCommitInterval
		if interval == 0 {
			interval = 100 * time.Millisecond
		}
		opts = append(opts, kgo.AutoCommitInterval(interval),
			kgo.AutoCommitCallback(func(_ *kgo.Client, req *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
				m.mu.Lock()
				defer m.mu.Unlock()
				m.autoCommits = append(m.autoCommits, kgoCommitResult{Req: req, Resp: resp, Err: err})
			}))
	} else {
		opts = append(opts, kgo.DisableAutoCommit())
	}
	opts = append(opts, cfg.Opts...)
	if os.Getenv("MINIBROKER_KGO_LOG") != "" {
		opts = append(opts, kgo.WithLogger(kgo.BasicLogger(t.Output(), kgo.LogLevelInfo, func() string { return name + " " })))
	}
	cl, err := kgo.NewClient(opts...)
	require.NoError(t, err)
	m.Client = cl
	ctx, cancel := context.WithCancel(context.Background())
	go m.poll(ctx)
	t.Cleanup(func() {
		cancel()
		m.Client.Close() // idempotent; a no-op after Close or kill
		<-m.pollDone
	})
	return m
}

// poll runs the consumer's poll loop, keeping every error a poll returns
// and every record it polls.
func (m *kgoMember) poll(ctx context.Context) {
	defer close(m.pollDone)
	for ctx.Err() == nil {
		fetches := m.Client.PollFetches(ctx)
		if fetches.IsClientClosed() {
			return
		}
		for _, fe := range fetches.Errors() {
			if errors.Is(fe.Err, context.Canceled) {
				continue
			}
			m.mu.Lock()
			m.pollErrs = append(m.pollErrs, fe.Err)
			m.mu.Unlock()
		}
		fetches.EachRecord(func(r *kgo.Record) {
			m.mu.Lock()
			defer m.mu.Unlock()
			m.records = append(m.records, fmt.Sprintf("%d@%d:%s", r.Partition, r.Offset, r.Value))
		})
	}
}

// Records returns the records the member polled, in order:
// "partition@offset:value".
func (m *kgoMember) Records() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.records)
}

func (m *kgoMember) record(kind string, cl *kgo.Client, ps map[string][]int32) {
	_, gen := cl.GroupMetadata()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.events = append(m.events, kgoEvent{Kind: kind, Partitions: kgoClone(ps), Generation: gen})
	for topic, parts := range ps {
		switch kind {
		case "assigned":
			m.owned[topic] = kgoSorted(append(m.owned[topic], parts...))
		default:
			m.owned[topic] = slices.DeleteFunc(m.owned[topic], func(p int32) bool { return slices.Contains(parts, p) })
		}
		if len(m.owned[topic]) == 0 {
			delete(m.owned, topic)
		}
	}
}

// Owned returns the partitions the member's callbacks say it owns.
func (m *kgoMember) Owned() map[string][]int32 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return kgoClone(m.owned)
}

// Events returns a copy of the callbacks seen so far.
func (m *kgoMember) Events() []kgoEvent {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.events)
}

// PollErrs returns a copy of the errors polls returned so far.
func (m *kgoMember) PollErrs() []error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.pollErrs)
}

// ManageErrs returns a copy of the errors that ended group sessions.
func (m *kgoMember) ManageErrs() []error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.manageErrs)
}

// AutoCommits returns a copy of what kgo's autocommits reported.
func (m *kgoMember) AutoCommits() []kgoCommitResult {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.autoCommits)
}

// MemberID returns the member id kgo holds.
func (m *kgoMember) MemberID() string {
	id, _ := m.Client.GroupMetadata()
	return id
}

// Generation returns the generation kgo holds.
func (m *kgoMember) Generation() int32 {
	_, gen := m.Client.GroupMetadata()
	return gen
}

// Close closes the client the normal way: kgo revokes everything, sends
// LeaveGroup and closes its connections.
func (m *kgoMember) Close() {
	m.Client.Close()
	<-m.pollDone
}

// Kill stops the member the way a crash looks to the broker: every TCP
// connection of the client is closed abruptly and no new one can be opened,
// so nothing the client does afterwards, its LeaveGroup included, reaches
// the broker. kgo has no way to close without leaving (Close always sends
// LeaveGroup for a dynamic member), so the client is then shut down locally:
// LeaveGroupContext with an already canceled context makes kgo give up on
// the leave at once, and Close after it only releases goroutines. The
// broker learns of the member's end only when its session expires.
func (m *kgoMember) Kill() {
	m.dialer.Cut()
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	_ = m.Client.LeaveGroupContext(canceled)
	m.Client.Close()
	<-m.pollDone
}

// kgoConverged reports "" when the members and the coordinator agree on a
// settled group: the coordinator's group is Stable with exactly these
// members; every member holds the group's generation and its last callback
// is OnPartitionsAssigned at that generation; what each member's
// callbacks say it owns equals the coordinator's assignment for it; and the
// members' partitions of topic are disjoint and cover 0..partitions-1.
func kgoConverged(b *testBroker, group, topic string, partitions int32, members ...*kgoMember) string {
	v := b.describe(group)
	if v.State != coordinator.Stable {
		return fmt.Sprintf("group %s is %s", group, v.State)
	}
	if len(v.Members) != len(members) {
		return fmt.Sprintf("group has %d members, want %d", len(v.Members), len(members))
	}
	byID := map[string]coordinator.MemberView{}
	for _, mv := range v.Members {
		byID[mv.MemberID] = mv
	}
	seen := map[int32]string{}
	for _, m := range members {
		id, gen := m.Client.GroupMetadata()
		mv, ok := byID[id]
		if !ok {
			return fmt.Sprintf("%s (member %q) is not in the group", m.Name, id)
		}
		if gen != v.Generation {
			return fmt.Sprintf("%s holds generation %d, group is at %d", m.Name, gen, v.Generation)
		}
		// kgo takes the generation from the JoinGroup response, before
		// its SyncGroup, and calls OnPartitionsAssigned (always, even
		// with nothing assigned) only once the sync is done: until that
		// callback a member holding the group's generation may still be
		// between join and sync, and its callbacks are not over.
		if ev := m.Events(); len(ev) == 0 || ev[len(ev)-1].Kind != "assigned" || ev[len(ev)-1].Generation != v.Generation {
			return fmt.Sprintf("%s has not finished its session's setup at generation %d: callbacks %v", m.Name, v.Generation, ev)
		}
		want := map[string][]int32{}
		for _, tp := range mv.Assignment {
			want[tp.Topic] = append(want[tp.Topic], tp.Partition)
		}
		owned := m.Owned()
		if !maps.EqualFunc(owned, want, slices.Equal) {
			return fmt.Sprintf("%s owns %v, coordinator assigned %v", m.Name, owned, want)
		}
		for _, p := range owned[topic] {
			if other, dup := seen[p]; dup {
				return fmt.Sprintf("%s-%d owned by %s and %s", topic, p, other, m.Name)
			}
			seen[p] = m.Name
		}
	}
	for p := range partitions {
		if _, ok := seen[p]; !ok {
			return fmt.Sprintf("%s-%d is owned by nobody", topic, p)
		}
	}
	return ""
}

// waitKgoConverged waits until kgoConverged holds and returns the group's
// generation.
func waitKgoConverged(t *testing.T, b *testBroker, group, topic string, partitions int32, members ...*kgoMember) int32 {
	t.Helper()
	testutil.Eventually(t, kgoWait, func() string { return kgoConverged(b, group, topic, partitions, members...) })
	return b.describe(group).Generation
}

func kgoClone(ps map[string][]int32) map[string][]int32 {
	out := make(map[string][]int32, len(ps))
	for topic, parts := range ps {
		out[topic] = kgoSorted(slices.Clone(parts))
	}
	return out
}

func kgoSorted(ps []int32) []int32 {
	slices.Sort(ps)
	return slices.Compact(ps)
}
