package integration

// The kgo side of the KIP-848 tests: kgo consumers that record what their
// callbacks report, and the checks that the group converged on the
// coordinator's assignment and stays there.

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/assignor"
	"github.com/minibroker/minibroker/broker"
	"github.com/minibroker/minibroker/coordinator"
)

// k848RealClock adjusts startBroker's broker for these tests: the real
// clock and its expiry ticker, and a 100 ms heartbeat so that a test sees
// many in a second. The session is long enough that a live member never
// expires under -race on two cores.
func k848RealClock(cfg *broker.Config) {
	cfg.ManualClock = false
	cfg.ConsumerSessionTimeout, cfg.ConsumerHeartbeatInterval = 3*time.Second, 100*time.Millisecond
}

// k848Member is one kgo consumer in a KIP-848 group and the assignment its
// callbacks report.
type k848Member struct {
	name string
	cl   *kgo.Client

	mu    sync.Mutex
	owned map[string][]int32 // guarded by mu; sorted partitions by topic
}

// k848NewMember starts a kgo consumer of topics in group with
// kgo.ServerSideBalancer and balancer; it is closed at cleanup.
func k848NewMember(t *testing.T, b *testBroker, group, name string, balancer kgo.GroupBalancer, topics ...string) *k848Member {
	t.Helper()
	return k848Start(t, b, group, name, balancer, topics)
}

// k848NewStaticMember is k848NewMember with kgo.InstanceID(instance).
func k848NewStaticMember(t *testing.T, b *testBroker, group, name, instance string, balancer kgo.GroupBalancer, topics ...string) *k848Member {
	t.Helper()
	return k848Start(t, b, group, name, balancer, topics, kgo.InstanceID(instance))
}

func k848Start(t *testing.T, b *testBroker, group, name string, balancer kgo.GroupBalancer, topics []string, extra ...kgo.Opt) *k848Member {
	t.Helper()
	m := &k848Member{name: name, owned: map[string][]int32{}}
	opts := append([]kgo.Opt{
		kgo.SeedBrokers(b.Addr()),
		kgo.ClientID(name),
		kgo.ConsumerGroup(group),
		kgo.ConsumeTopics(topics...),
		kgo.Balancers(balancer),
		kgo.ServerSideBalancer(),
		kgo.DisableAutoCommit(),
		kgo.RetryBackoffFn(func(int) time.Duration { return 50 * time.Millisecond }),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, added map[string][]int32) { m.change(added, true) }),
		kgo.OnPartitionsRevoked(func(_ context.Context, _ *kgo.Client, lost map[string][]int32) { m.change(lost, false) }),
		kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, lost map[string][]int32) { m.change(lost, false) }),
		kgo.WithLogger(kgo.BasicLogger(t.Output(), kgo.LogLevelWarn, func() string { return name + " " })),
	}, extra...)
	cl, err := kgo.NewClient(opts...)
	require.NoError(t, err)
	m.cl = cl
	t.Cleanup(cl.Close)
	return m
}

// change adds or removes partitions, as kgo's cooperative callbacks report
// them (the consumer protocol is always incremental on the client side).
func (m *k848Member) change(parts map[string][]int32, add bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for topic, ps := range parts {
		cur := m.owned[topic]
		if add {
			cur = append(cur, ps...)
		} else {
			cur = slices.DeleteFunc(cur, func(p int32) bool { return slices.Contains(ps, p) })
		}
		slices.Sort(cur)
		cur = slices.Compact(cur)
		if len(cur) == 0 {
			delete(m.owned, topic)
		} else {
			m.owned[topic] = cur
		}
	}
}

// assigned returns what the callbacks say the member owns.
func (m *k848Member) assigned() map[string][]int32 {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[string][]int32{}
	for topic, ps := range m.owned {
		out[topic] = slices.Clone(ps)
	}
	return out
}

// k848ByTopic groups sorted partitions by topic.
func k848ByTopic(parts []assignor.TopicPartition) map[string][]int32 {
	out := map[string][]int32{}
	for _, tp := range parts {
		out[tp.Topic] = append(out[tp.Topic], tp.Partition)
	}
	return out
}

// k848Converged reports whether group is Stable with exactly members, each
// at the group epoch on both sides, and each member's callbacks agreeing
// with the coordinator's view of its assignment.
func k848Converged(b *testBroker, group string, members ...*k848Member) bool {
	v, ok := b.Coordinator().Describe(group)
	if !ok || v.State != coordinator.Stable || len(v.Members) != len(members) {
		return false
	}
	for _, m := range members {
		id, epoch := m.cl.GroupMetadata()
		i := slices.IndexFunc(v.Members, func(mv coordinator.MemberView) bool { return mv.MemberID == id })
		if i < 0 || epoch != v.Generation || v.Members[i].MemberEpoch != v.Generation {
			return false
		}
		if !maps.EqualFunc(m.assigned(), k848ByTopic(v.Members[i].Assignment), slices.Equal) {
			return false
		}
	}
	return true
}

// k848AwaitConverged waits until k848Converged holds and returns the view.
func k848AwaitConverged(t *testing.T, b *testBroker, group string, members ...*k848Member) coordinator.GroupView {
	t.Helper()
	eventually(t, func() bool { return k848Converged(b, group, members...) }, fmt.Sprintf("group %s never converged on %d members", group, len(members)))
	v, _ := b.Coordinator().Describe(group)
	return v
}

// k848AssertStable checks that the converged group stays at its epoch, with
// the same members and assignment, while every member heartbeats beats
// more times (seen as its session deadline moving on).
func k848AssertStable(t *testing.T, b *testBroker, group string, beats int) {
	t.Helper()
	start, _ := b.Coordinator().Describe(group)
	deadlines := map[string]map[time.Time]bool{}
	eventually(t, func() bool {
		v, _ := b.Coordinator().Describe(group)
		require.Equal(t, start.Generation, v.Generation, "the group epoch moved while the group was idle")
		require.Equal(t, coordinator.Stable, v.State)
		require.Len(t, v.Members, len(start.Members))
		done := true
		for i, m := range v.Members {
			require.Equal(t, start.Members[i].MemberID, m.MemberID)
			require.Equal(t, start.Members[i].Assignment, m.Assignment)
			if deadlines[m.MemberID] == nil {
				deadlines[m.MemberID] = map[time.Time]bool{}
			}
			deadlines[m.MemberID][m.Deadline] = true
			done = done && len(deadlines[m.MemberID]) > beats
		}
		return done
	}, fmt.Sprintf("members of %s did not heartbeat %d times", group, beats))
}

// k848Subscriptions is the view's subscriptions and the partition counts of
// the chapter's topics, the input of the assignors.
func k848Subscriptions(v coordinator.GroupView) (map[string][]string, map[string]int32) {
	subs := map[string][]string{}
	for _, m := range v.Members {
		subs[m.MemberID] = m.Topics
	}
	return subs, defaultTopics()
}

// k848CommitOwned commits offset 100+p of every partition p the member
// owns, with kgo's own member id and epoch, and requires every partition
// to succeed; it returns what it committed.
func k848CommitOwned(t *testing.T, m *k848Member) map[string]map[int32]int64 {
	t.Helper()
	offsets := map[string]map[int32]kgo.EpochOffset{}
	want := map[string]map[int32]int64{}
	for topic, ps := range m.assigned() {
		offsets[topic], want[topic] = map[int32]kgo.EpochOffset{}, map[int32]int64{}
		for _, p := range ps {
			offsets[topic][p] = kgo.EpochOffset{Epoch: -1, Offset: 100 + int64(p)}
			want[topic][p] = 100 + int64(p)
		}
	}
	var resp *kmsg.OffsetCommitResponse
	var err error
	ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
	defer cancel()
	m.cl.CommitOffsetsSync(ctx, offsets, func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, r *kmsg.OffsetCommitResponse, e error) {
		resp, err = r, e
	})
	require.NoError(t, err, "%s commits", m.name)
	n := 0
	for _, topic := range resp.Topics {
		for _, p := range topic.Partitions {
			assert.Zero(t, p.ErrorCode, "%s commits %s-%d", m.name, topic.Topic, p.Partition)
			n++
		}
	}
	for _, ps := range want {
		n -= len(ps)
	}
	assert.Zero(t, n, "the response names every partition")
	return want
}

// k848FetchCommitted reads the group's committed offsets back with kadm.
func k848FetchCommitted(t *testing.T, cl *kgo.Client, group string) map[string]map[int32]int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
	defer cancel()
	resps, err := kadm.NewClient(cl).FetchOffsets(ctx, group)
	require.NoError(t, err)
	out := map[string]map[int32]int64{}
	resps.Each(func(o kadm.OffsetResponse) {
		require.NoError(t, o.Err)
		if out[o.Topic] == nil {
			out[o.Topic] = map[int32]int64{}
		}
		out[o.Topic][o.Partition] = o.At
	})
	return out
}
