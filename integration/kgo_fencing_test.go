package integration

// The chapter's fencing as a kgo consumer sees it. A kgo member A owns all of
// orders(4) in generation 1. A raw member B joins, and the coordinator
// completes the rebalance at once: generation 2, A: 0,2 and B: 1,3. A has
// missed that rebalance; it learns of it only from its next heartbeat.

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/internal/testutil"
	"github.com/minibroker/minibroker/testkit/wiretest"
)

// TestKgoFencingStaleMember pins what kgo reports at each step of the
// chapter's fencing scenario:
//
//  1. A's next heartbeat carries generation 1 and gets ILLEGAL_GENERATION.
//     kgo treats that as a fatal session error: OnPartitionsLost with every
//     partition (not OnPartitionsRevoked), the HookGroupManageError hook
//     with kerr.IllegalGeneration, and a poll error *kgo.ErrGroupSession
//     wrapping it.
//  2. A commit A makes before it re-joins still carries generation 1: kgo's
//     CommitOffsetsSync callback gets a nil error and a response with
//     ILLEGAL_GENERATION on every partition, and nothing is stored. kgo
//     also queues a re-join (commitHasFatalMemberError), which the re-join
//     of step 3 absorbs.
//  3. A re-joins with its member id. The unchanged re-join is a refresh:
//     generation 2, no new rebalance, OnPartitionsAssigned with 0 and 2.
//  4. A commits its partitions in generation 2: NONE, stored, read back by
//     OffsetFetch and kadm.
//  5. A commits a partition it no longer owns: REBALANCE_IN_PROGRESS on
//     that partition (the chapter's ownership check), nothing stored, and
//     kgo does not re-join.
//
// Against Kafka, B's join would only start a rebalance (PreparingRebalance)
// and wait for A: A's heartbeat would get REBALANCE_IN_PROGRESS and kgo
// would call OnPartitionsRevoked (a chance to commit) instead of
// OnPartitionsLost; A's generation-1 commit would be accepted until A
// re-joined; A, the leader, re-joining in Stable would start a new
// generation; and the commit of B's partition would be accepted, since the
// classic protocol has no ownership check. Each is a behavior-matrix row.
func TestKgoFencingStaleMember(t *testing.T) {
	t.Parallel()
	for _, bc := range kgoBalancers {
		t.Run(bc.name, func(t *testing.T) {
			t.Parallel()
			b := startBroker(t, kgoConfig(map[string]int32{"orders": 4}))
			const group = "fencing"

			// OnPartitionsLost holds A in kgo's session-error path (after
			// the heartbeat error, before the re-join) until the test has
			// made its stale commit, so the commit provably carries the
			// generation A missed the rebalance with.
			lost := make(chan map[string][]int32, 1)
			release := make(chan struct{})
			a := newKgoMember(t, b, "a", kgoMemberConfig{
				Group: group, Topics: []string{"orders"}, Balancer: bc.balancer(),
				// A does not heartbeat while held; its session must
				// outlast the hold.
				SessionTimeout: 10 * time.Second,
				OnLost: func(ps map[string][]int32) {
					select {
					case lost <- ps:
						<-release
					default:
					}
				},
			})
			t.Cleanup(func() {
				select {
				case <-release:
				default:
					close(release)
				}
			})
			gen1 := waitKgoConverged(t, b, group, "orders", 4, a)
			require.Equal(t, int32(1), gen1)
			aID := a.MemberID()

			resp, err := kgoCommitSync(a.Client, kgoOffsets("orders", map[int32]int64{0: 10, 1: 11, 2: 12, 3: 13}))
			require.NoError(t, err)
			require.Empty(t, kgoCommitErrs(resp, "orders"))

			// B joins with the protocol A offers: the rebalance
			// completes at once, and A is not told.
			bID, gen2, bParts := kgoRawJoin(t, b.Addr(), group, "b", bc.name, []string{"orders"})
			require.Equal(t, int32(2), gen2)
			require.Equal(t, []int32{1, 3}, bParts)
			require.Greater(t, bID, aID, "B sorts after A")

			// 1. The heartbeat error.
			var lostParts map[string][]int32
			select {
			case lostParts = <-lost:
			case <-time.After(kgoWait):
				t.Fatal("A's heartbeat never reported the missed rebalance")
			}
			assert.Equal(t, map[string][]int32{"orders": {0, 1, 2, 3}}, lostParts, "OnPartitionsLost gets everything A owned")
			id, gen := a.Client.GroupMetadata()
			assert.Equal(t, aID, id)
			assert.Equal(t, gen1, gen, "A still holds the generation it missed the rebalance with")

			// 2. The stale commit.
			stale := kgoOffsets("orders", map[int32]int64{0: 20, 1: 21, 2: 22, 3: 23})
			var staleReq *kmsg.OffsetCommitRequest
			var staleResp *kmsg.OffsetCommitResponse
			var staleErr error
			ctx, cancel := context.WithTimeout(context.Background(), kgoWait)
			a.Client.CommitOffsetsSync(ctx, stale, func(_ *kgo.Client, req *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
				staleReq, staleResp, staleErr = req, resp, err
			})
			cancel()
			require.NoError(t, staleErr, "the request itself succeeds; the rejection is per partition")
			assert.Equal(t, gen1, staleReq.Generation)
			assert.Equal(t, aID, staleReq.MemberID)
			assert.Equal(t, map[int32]error{0: kerr.IllegalGeneration, 1: kerr.IllegalGeneration, 2: kerr.IllegalGeneration, 3: kerr.IllegalGeneration},
				kgoCommitErrs(staleResp, "orders"), "every partition carries the one code that rejected the commit")
			assert.Equal(t, map[int32]int64{0: 10, 1: 11, 2: 12, 3: 13}, kgoFetchCommitted(t, a.Client, group, "orders", 4), "the stale commit stored nothing")

			// 3. The re-join.
			close(release)
			testutil.Eventually(t, kgoWait, func() string {
				if got := a.Owned(); len(got["orders"]) != 2 || a.Generation() != gen2 {
					return "A has not re-joined yet"
				}
				return ""
			})
			assert.Equal(t, map[string][]int32{"orders": {0, 2}}, a.Owned())
			assert.Equal(t, gen2, b.describe(group).Generation, "A's re-join was a refresh: no new generation")
			// kgo calls HookGroupManageError after OnPartitionsLost returns.
			if errs := a.ManageErrs(); assert.Len(t, errs, 1) {
				assert.ErrorIs(t, errs[0], kerr.IllegalGeneration, "the session ended on the heartbeat's ILLEGAL_GENERATION")
			}
			assert.Equal(t, aID, a.MemberID(), "A keeps its member id")
			assert.Equal(t, []kgoEvent{
				{Kind: "assigned", Partitions: map[string][]int32{"orders": {0, 1, 2, 3}}, Generation: 1},
				{Kind: "lost", Partitions: map[string][]int32{"orders": {0, 1, 2, 3}}, Generation: 1},
				{Kind: "assigned", Partitions: map[string][]int32{"orders": {0, 2}}, Generation: 2},
			}, a.Events())
			testutil.Eventually(t, kgoWait, func() string {
				for _, err := range a.PollErrs() {
					var se *kgo.ErrGroupSession
					if errors.As(err, &se) && errors.Is(err, kerr.IllegalGeneration) {
						return ""
					}
				}
				return "no ErrGroupSession(ILLEGAL_GENERATION) from PollFetches"
			})

			// 4. The commit after the re-join.
			resp, err = kgoCommitSync(a.Client, kgoOffsets("orders", map[int32]int64{0: 30, 2: 32}))
			require.NoError(t, err)
			assert.Empty(t, kgoCommitErrs(resp, "orders"))
			kgoAssertCommitted(t, b, a.Client, group, "orders", map[int32]int64{0: 30, 1: 11, 2: 32, 3: 13})

			// 5. A commit of B's partition.
			resp, err = kgoCommitSync(a.Client, kgoOffsets("orders", map[int32]int64{1: 41}))
			require.NoError(t, err)
			assert.Equal(t, map[int32]error{1: kerr.RebalanceInProgress}, kgoCommitErrs(resp, "orders"))
			assert.Equal(t, map[int32]int64{0: 30, 1: 11, 2: 32, 3: 13}, kgoFetchCommitted(t, a.Client, group, "orders", 4))
			// kgo would signal a re-join from the commit path at once;
			// two more heartbeat round trips show it did not.
			beats := a.Heartbeats()
			testutil.Eventually(t, kgoWait, func() string {
				if a.Heartbeats() < beats+2 {
					return "A has not heartbeated twice since the commit"
				}
				return ""
			})
			assert.Len(t, a.Events(), 3, "REBALANCE_IN_PROGRESS on a commit makes kgo neither revoke nor re-join")
			assert.Equal(t, gen2, a.Generation())
			assert.Equal(t, gen2, b.describe(group).Generation)
			assert.Len(t, a.ManageErrs(), 1, "A's session did not end again")
		})
	}
}

// kgoOffsets builds a commit of topic's partitions at the given offsets.
func kgoOffsets(topic string, offs map[int32]int64) map[string]map[int32]kgo.EpochOffset {
	out := map[string]map[int32]kgo.EpochOffset{topic: {}}
	for p, o := range offs {
		out[topic][p] = kgo.EpochOffset{Epoch: -1, Offset: o}
	}
	return out
}

// kgoRawJoin joins group as a raw kmsg client, the way a v9 client does
// (MEMBER_ID_REQUIRED, then a join with the id it got), offering one
// protocol named protocolName that subscribes to topics, then syncs. It
// returns the member id, the generation and the partitions assigned. The
// member never heartbeats: its session (30 s) outlasts the test.
func kgoRawJoin(t *testing.T, addr, group, clientID, protocolName string, topics []string) (string, int32, []int32) {
	t.Helper()
	cl := wiretest.Dial(t, addr, clientID)
	join := wiretest.JoinRequest(9, group, "", 30*time.Second, topics...)
	join.Protocols[0].Name = protocolName
	jr := wiretest.Do[*kmsg.JoinGroupResponse](t, cl, join)
	require.Equal(t, kerr.MemberIDRequired.Code, jr.ErrorCode)
	join.MemberID = jr.MemberID
	jr = wiretest.Do[*kmsg.JoinGroupResponse](t, cl, join)
	require.Zero(t, jr.ErrorCode, kerr.ErrorForCode(jr.ErrorCode))

	sync := wiretest.SyncRequest(5, group, jr.MemberID, jr.Generation)
	sync.ProtocolType, sync.Protocol = kmsg.StringPtr("consumer"), kmsg.StringPtr(protocolName)
	sr := wiretest.Do[*kmsg.SyncGroupResponse](t, cl, sync)
	require.Zero(t, sr.ErrorCode, kerr.ErrorForCode(sr.ErrorCode))
	var assignment kmsg.ConsumerMemberAssignment
	require.NoError(t, assignment.ReadFrom(sr.MemberAssignment))
	var parts []int32
	for _, at := range assignment.Topics {
		parts = append(parts, at.Partitions...)
	}
	return jr.MemberID, jr.Generation, kgoSorted(parts)
}
