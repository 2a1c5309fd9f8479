package integration

// franz-go kgo consumer groups (classic protocol) against minibroker, with
// kgo's eager RoundRobinBalancer and its default cooperative-sticky
// balancer. The coordinator assigns round-robin itself whatever the client
// offers, so both reach the same assignments.

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/internal/testutil"
)

// kgoBalancers are the two classic-protocol balancers the tests run with.
var kgoBalancers = []struct {
	name     string
	balancer func() kgo.GroupBalancer
}{
	{"roundrobin", kgo.RoundRobinBalancer},
	{"cooperative-sticky", kgo.CooperativeStickyBalancer},
}

// kgoSteadyState is how long a settled group is watched for a rebalance
// storm.
const kgoSteadyState = 5 * time.Second

// TestKgoGroupLifecycle runs three kgo members on orders(4) through a
// group's life: they settle on disjoint assignments that cover every
// partition, stay on one generation through 5 s of steady state, commit
// explicitly and by autocommit, and the group covers every partition again
// after one member closes, after a fourth joins, and after one is killed
// without leaving (its session expires).
func TestKgoGroupLifecycle(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("watches 5 s of steady state")
	}
	for _, bc := range kgoBalancers {
		t.Run(bc.name, func(t *testing.T) {
			t.Parallel()
			b := startBroker(t, kgoConfig(map[string]int32{"orders": 4, "payments": 1}))
			const group = "lifecycle"
			cfg := kgoMemberConfig{Group: group, Topics: []string{"orders"}, Balancer: bc.balancer(), AutoCommit: true}
			ma := newKgoMember(t, b, "a", cfg)
			mb := newKgoMember(t, b, "b", cfg)
			mc := newKgoMember(t, b, "c", cfg)
			gen := waitKgoConverged(t, b, group, "orders", 4, ma, mb, mc)
			assert.Equal(t, int32(3), gen, "each join is a rebalance of its own (no join barrier); re-joins after fencing are refreshes")

			// The coordinator's round robin over sorted member ids
			// (client id a, b, c): a gets 0 and 3.
			assert.Equal(t, map[string][]int32{"orders": {0, 3}}, ma.Owned())
			assert.Equal(t, map[string][]int32{"orders": {1}}, mb.Owned())
			assert.Equal(t, map[string][]int32{"orders": {2}}, mc.Owned())
			v := b.describe(group)
			assert.Equal(t, bc.name, v.Protocol, "the group protocol is kgo's balancer name")

			t.Run("steady state keeps the generation", func(t *testing.T) {
				kgoAssertSteady(t, b, group, gen, ma, mb, mc)
			})

			t.Run("explicit commits land", func(t *testing.T) {
				want := map[int32]int64{}
				for i, m := range []*kgoMember{ma, mb, mc} {
					offs := map[string]map[int32]kgo.EpochOffset{"orders": {}}
					for _, p := range m.Owned()["orders"] {
						off := int64(100*(i+1)) + int64(p)
						offs["orders"][p] = kgo.EpochOffset{Epoch: -1, Offset: off}
						want[p] = off
					}
					resp, err := kgoCommitSync(m.Client, offs)
					require.NoError(t, err)
					require.Equal(t, map[int32]error{}, kgoCommitErrs(resp, "orders"), "member %s", m.Name)
				}
				kgoAssertCommitted(t, b, ma.Client, group, "orders", want)
			})

			t.Run("autocommit lands", func(t *testing.T) {
				// Nothing is produced here, so nothing is consumed to
				// autocommit. SetOffsets moves each member's position
				// and marks it for commit, and kgo's autocommit loop
				// (every 100 ms) commits it.
				want := map[int32]int64{}
				for i, m := range []*kgoMember{ma, mb, mc} {
					set := map[string]map[int32]kgo.EpochOffset{"orders": {}}
					for _, p := range m.Owned()["orders"] {
						off := int64(1000*(i+1)) + int64(p)
						set["orders"][p] = kgo.EpochOffset{Epoch: -1, Offset: off}
						want[p] = off
					}
					m.Client.SetOffsets(set)
				}
				testutil.Eventually(t, kgoWait, func() string {
					got := kgoFetchCommitted(t, ma.Client, group, "orders", 4)
					if fmt.Sprint(got) != fmt.Sprint(want) {
						return fmt.Sprintf("committed %v, want %v", got, want)
					}
					return ""
				})
				kgoAssertCommitted(t, b, ma.Client, group, "orders", want)
				// kgo calls AutoCommitCallback once it has read the
				// answer, which can be after the fetch above saw the
				// commit.
				testutil.Eventually(t, kgoWait, func() string {
					for _, m := range []*kgoMember{ma, mb, mc} {
						if !kgoAutoCommitted(m, "orders", want) {
							return fmt.Sprintf("%s's AutoCommitCallback saw no clean commit of %v: %+v", m.Name, m.Owned(), m.AutoCommits())
						}
					}
					return ""
				})
				assert.Equal(t, gen, b.describe(group).Generation, "commits do not rebalance")
			})

			t.Run("a closed member's partitions move", func(t *testing.T) {
				closedID := ma.MemberID()
				seen := len(mb.Events())
				ma.Close()
				_, stillMember := b.member(group, closedID)
				require.False(t, stillMember, "kgo's Close sent LeaveGroup before returning")
				next := waitKgoConverged(t, b, group, "orders", 4, mb, mc)
				assert.Equal(t, gen+1, next, "the leave was one rebalance: %s", kgoRebalances(b, group))
				assert.Equal(t, map[string][]int32{"orders": {0, 2}}, mb.Owned())
				assert.Equal(t, map[string][]int32{"orders": {1, 3}}, mc.Owned())
				// The rebalance completed inside the LeaveGroup, so b
				// learns of it from a heartbeat answered
				// ILLEGAL_GENERATION: kgo loses every partition, even
				// with the cooperative balancer, and re-joins. Against
				// Kafka the heartbeat would get REBALANCE_IN_PROGRESS
				// and a cooperative member would keep partition 1.
				assert.Equal(t, []kgoEvent{
					{Kind: "lost", Partitions: map[string][]int32{"orders": {1}}, Generation: gen},
					{Kind: "assigned", Partitions: map[string][]int32{"orders": {0, 2}}, Generation: next},
				}, mb.Events()[seen:], kgoRebalances(b, group))
				errs := mb.ManageErrs()
				require.NotEmpty(t, errs)
				assert.ErrorIs(t, errs[len(errs)-1], kerr.IllegalGeneration)
			})

			t.Run("a joining member gets a share", func(t *testing.T) {
				md := newKgoMember(t, b, "d", cfg)
				waitKgoConverged(t, b, group, "orders", 4, mb, mc, md)
				assert.Equal(t, map[string][]int32{"orders": {0, 3}}, mb.Owned())
				assert.Equal(t, map[string][]int32{"orders": {1}}, mc.Owned())
				assert.Equal(t, map[string][]int32{"orders": {2}}, md.Owned())

				t.Run("a killed member expires and its partitions move", func(t *testing.T) {
					killedID := mc.MemberID()
					mc.Kill()
					mv, stillMember := b.member(group, killedID)
					require.True(t, stillMember, "no LeaveGroup reached the broker")
					waitKgoConverged(t, b, group, "orders", 4, mb, md)
					assert.True(t, time.Now().After(mv.Deadline), "the member was removed only after its session deadline, by the expiry step")
					assert.Equal(t, map[string][]int32{"orders": {0, 2}}, mb.Owned())
					assert.Equal(t, map[string][]int32{"orders": {1, 3}}, md.Owned())
				})
			})
		})
	}
}

// TestKgoMemberWithoutPartitions runs two kgo members on payments(1): the
// one that gets no partition receives an empty but well-formed assignment
// (never zero bytes, which kgo cannot parse and answers by re-joining in a
// loop) and idles without errors.
func TestKgoMemberWithoutPartitions(t *testing.T) {
	t.Parallel()
	for _, bc := range kgoBalancers {
		t.Run(bc.name, func(t *testing.T) {
			t.Parallel()
			b := startBroker(t, kgoConfig(map[string]int32{"payments": 1}))
			cfg := kgoMemberConfig{Group: "idle", Topics: []string{"payments"}, Balancer: bc.balancer()}
			ma := newKgoMember(t, b, "a", cfg)
			mb := newKgoMember(t, b, "b", cfg)
			gen := waitKgoConverged(t, b, "idle", "payments", 1, ma, mb)
			assert.Equal(t, map[string][]int32{"payments": {0}}, ma.Owned())
			assert.Empty(t, mb.Owned())
			errs := len(mb.PollErrs())
			kgoAssertSteadyFor(t, time.Second, b, "idle", gen, ma, mb)
			assert.Len(t, mb.PollErrs(), errs, "the member without partitions polls without errors")
		})
	}
}

// kgoAssertSteady watches the group for kgoSteadyState and fails if its
// generation moves, a member's generation moves, or a member's callbacks
// fire: no rebalance storm.
func kgoAssertSteady(t *testing.T, b *testBroker, group string, gen int32, members ...*kgoMember) {
	t.Helper()
	kgoAssertSteadyFor(t, kgoSteadyState, b, group, gen, members...)
}

// kgoAssertSteadyFor is kgoAssertSteady for a given duration.
func kgoAssertSteadyFor(t *testing.T, d time.Duration, b *testBroker, group string, gen int32, members ...*kgoMember) {
	t.Helper()
	events := map[string]int{}
	for _, m := range members {
		events[m.Name] = len(m.Events())
	}
	deadline := time.Now().Add(d)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for time.Now().Before(deadline) {
		v := b.describe(group)
		require.Equal(t, gen, v.Generation, "the group rebalanced during steady state: %s", kgoRebalances(b, group))
		require.Len(t, v.Members, len(members))
		for _, m := range members {
			require.Equal(t, gen, m.Generation(), "member %s changed generation: %s", m.Name, kgoRebalances(b, group))
			require.Len(t, m.Events(), events[m.Name], "member %s saw a callback during steady state: %v; %s", m.Name, m.Events(), kgoRebalances(b, group))
		}
		<-tick.C
	}
}

// kgoRebalances lists group's rebalances as the coordinator logged them
// (generation, reason, members), for a failure message.
func kgoRebalances(b *testBroker, group string) string {
	var out []string
	for _, r := range b.Logs.Find("rebalance complete") {
		if r.Attrs["group"] == group {
			out = append(out, fmt.Sprintf("generation %s (%s): %s", r.Attrs["generation"], r.Attrs["reason"], r.Attrs["members"]))
		}
	}
	return "rebalances: " + strings.Join(out, "; ")
}

// kgoAutoCommitted reports whether one of m's autocommits committed every
// partition m owns of topic at its offset in want, with no error.
func kgoAutoCommitted(m *kgoMember, topic string, want map[int32]int64) bool {
	owned := m.Owned()[topic]
	for _, ac := range m.AutoCommits() {
		if ac.Err != nil || len(kgoCommitErrs(ac.Resp, topic)) > 0 {
			continue
		}
		got := map[int32]int64{}
		for _, rt := range ac.Req.Topics {
			for _, rp := range rt.Partitions {
				if rt.Topic == topic {
					got[rp.Partition] = rp.Offset
				}
			}
		}
		ok := len(got) == len(owned)
		for _, p := range owned {
			ok = ok && got[p] == want[p]
		}
		if ok {
			return true
		}
	}
	return false
}

// kgoCommitSync commits offs through kgo's CommitOffsetsSync and returns
// what its callback received.
func kgoCommitSync(cl *kgo.Client, offs map[string]map[int32]kgo.EpochOffset) (*kmsg.OffsetCommitResponse, error) {
	ctx, cancel := context.WithTimeout(context.Background(), kgoWait)
	defer cancel()
	var resp *kmsg.OffsetCommitResponse
	var err error
	cl.CommitOffsetsSync(ctx, offs, func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, r *kmsg.OffsetCommitResponse, e error) {
		resp, err = r, e
	})
	return resp, err
}

// kgoCommitErrs returns the non-nil per-partition errors of topic in resp.
func kgoCommitErrs(resp *kmsg.OffsetCommitResponse, topic string) map[int32]error {
	out := map[int32]error{}
	for _, rt := range resp.Topics {
		if rt.Topic != topic {
			continue
		}
		for _, rp := range rt.Partitions {
			if err := kerr.ErrorForCode(rp.ErrorCode); err != nil {
				out[rp.Partition] = err
			}
		}
	}
	return out
}

// kgoFetchCommitted reads group's committed offsets of topic's partitions
// 0..n-1 with a raw OffsetFetch through cl; partitions without a commit are
// left out.
func kgoFetchCommitted(t *testing.T, cl *kgo.Client, group, topic string, n int32) map[int32]int64 {
	t.Helper()
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Group = group
	rt := kmsg.NewOffsetFetchRequestTopic()
	rt.Topic = topic
	for p := range n {
		rt.Partitions = append(rt.Partitions, p)
	}
	req.Topics = append(req.Topics, rt)
	ctx, cancel := context.WithTimeout(context.Background(), kgoWait)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl)
	require.NoError(t, err)
	require.NoError(t, kerr.ErrorForCode(resp.ErrorCode))
	out := map[int32]int64{}
	for _, ft := range resp.Topics {
		for _, fp := range ft.Partitions {
			require.NoError(t, kerr.ErrorForCode(fp.ErrorCode))
			if ft.Topic == topic && fp.Offset >= 0 {
				out[fp.Partition] = fp.Offset
			}
		}
	}
	return out
}

// kgoAssertCommitted checks group's committed offsets of topic with a raw
// OffsetFetch, with kadm, and in the broker's store.
func kgoAssertCommitted(t *testing.T, b *testBroker, cl *kgo.Client, group, topic string, want map[int32]int64) {
	t.Helper()
	assert.Equal(t, want, kgoFetchCommitted(t, cl, group, topic, 4), "OffsetFetch")

	ctx, cancel := context.WithTimeout(context.Background(), kgoWait)
	defer cancel()
	fetched, err := b.admin(t).FetchOffsets(ctx, group)
	require.NoError(t, err)
	require.NoError(t, fetched.Error())
	got := map[int32]int64{}
	fetched.Each(func(r kadm.OffsetResponse) {
		if r.Topic == topic {
			got[r.Partition] = r.At
		}
	})
	assert.Equal(t, want, got, "kadm FetchOffsets")

	stored := map[int32]int64{}
	for _, e := range b.Coordinator().Committed(group) {
		if e.Topic == topic {
			stored[e.Partition] = e.Offset
		}
	}
	assert.Equal(t, want, stored, "the broker's offset store")
}
