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
	"github.com/minibroker/minibroker/offsets"
)

// TestExercise2StaleGenerationCommitRejectedThenAcceptedAfterRefresh is the
// chapter's exercise 2: the first member still holds generation 1 when the
// second join makes it 2; its commit is fenced until it refreshes.
func TestExercise2StaleGenerationCommitRejectedThenAcceptedAfterRefresh(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	first := f.join("lab", "member-1", "orders")
	f.join("lab", "member-2", "orders")

	err := f.commit("lab", "member-1", first.Generation, "orders-0")
	require.ErrorIs(t, err, ErrIllegalGeneration)
	require.Empty(t, f.c.Committed("lab"))

	gen, parts, err := f.c.Assignment("lab", "member-1")
	require.NoError(t, err)
	require.NoError(t, f.c.Commit("lab", "member-1", gen, []offsets.Entry{
		{Topic: "orders", Partition: parts[0].Partition, Offset: 6, LeaderEpoch: offsets.NoLeaderEpoch},
	}))
	require.Equal(t, []offsets.Entry{{Topic: "orders", Partition: 0, Offset: 6, LeaderEpoch: offsets.NoLeaderEpoch}}, f.c.Committed("lab"))
}

// TestExercise4OwnershipFencing is the chapter's exercise 4: a generation
// names the assignment, not a member's share of it, so a current member
// committing another member's partition is fenced, and nothing is stored.
func TestExercise4OwnershipFencing(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.join("lab", "member-1", "orders")
	second := f.join("lab", "member-2", "orders")

	// member-2 owns orders-1 and orders-3; orders-0 is member-1's.
	err := f.commit("lab", "member-2", second.Generation, "orders-1", "orders-0")
	require.ErrorIs(t, err, ErrNotPartitionOwner)
	require.Empty(t, f.c.Committed("lab"), "all-or-nothing: orders-1 is not stored either")

	require.NoError(t, f.commit("lab", "member-2", second.Generation, "orders-1", "orders-3"))
	require.Len(t, f.c.Committed("lab"), 2)
}

func TestCommitOnEmptyGroupIsRebalanceInProgress(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	res := f.join("g", "a", "orders")
	f.c.Leave("g", "a")
	require.ErrorIs(t, f.commit("g", "a", res.Generation+1, "orders-0"), ErrRebalanceInProgress)
	require.Empty(t, f.c.Committed("g"))
}

func TestCommitCheckOrder(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.join("g", "a", "orders")
	f.join("g", "b", "orders")
	big := strings.Repeat("x", offsets.MaxMetadataBytes+1)

	cases := []struct {
		name          string
		group, member string
		generation    int32
		entries       []offsets.Entry
		want          error
	}{
		{"unknown group", "nogroup", "a", 2, entries("orders-0"), ErrUnknownMemberID},
		{"stale generation before membership", "g", "ghost", 1, entries("orders-0"), ErrIllegalGeneration},
		{"unknown member", "g", "ghost", 2, entries("orders-0"), ErrUnknownMemberID},
		{"partition of another member", "g", "a", 2, entries("orders-1"), ErrNotPartitionOwner},
		{"partition that does not exist", "g", "a", 2, entries("orders-9"), ErrNotPartitionOwner},
		{"ownership before offset checks", "g", "a", 2, []offsets.Entry{{Topic: "orders", Partition: 1, Offset: -3}}, ErrNotPartitionOwner},
		{"negative offset", "g", "a", 2, []offsets.Entry{{Topic: "orders", Partition: 0, Offset: -3}}, offsets.ErrNegativeOffset},
		{"metadata too large", "g", "a", 2, []offsets.Entry{{Topic: "orders", Partition: 0, Metadata: big}}, offsets.ErrMetadataTooLarge},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			require.ErrorIs(t, f.c.Commit(tc.group, tc.member, tc.generation, tc.entries), tc.want)
		})
	}
	require.Empty(t, f.c.Committed("g"))

	metadataAtLimit := []offsets.Entry{{Topic: "orders", Partition: 0, Offset: 3, Metadata: big[1:], LeaderEpoch: 7}}
	require.NoError(t, f.c.Commit("g", "a", 2, metadataAtLimit))
	require.Equal(t, metadataAtLimit, f.c.Committed("g"))
	require.NoError(t, f.c.Commit("g", "a", 2, nil), "an empty commit is accepted")
}

// TestCommitResetSentinels: the offsets -1 and -2 that a client commits when
// it resets a partition (kafkajs does) are stored as given, through a
// fenced commit, a direct commit and a consumer-protocol member's commit
// alike; -3 is refused in each, and a commit that carries it stores
// nothing, sentinels included.
func TestCommitResetSentinels(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	res := f.join("g", "a", "orders")
	f.consumerJoin("c", "m", "orders")
	sentinels := func(p0, p1 int64) []offsets.Entry {
		return []offsets.Entry{{Topic: "orders", Partition: 0, Offset: p0, LeaderEpoch: -1}, {Topic: "orders", Partition: 1, Offset: p1, LeaderEpoch: -1}}
	}
	for _, tc := range []struct {
		name   string
		group  string
		commit func(entries []offsets.Entry) error
	}{
		{"fenced", "g", func(e []offsets.Entry) error { return f.c.Commit("g", "a", res.Generation, e) }},
		{"direct", "manual", func(e []offsets.Entry) error { return f.c.CommitDirect("manual", e) }},
		{"consumer protocol", "c", func(e []offsets.Entry) error {
			return f.c.CommitMember(CommitRequest{Group: "c", MemberID: "m", Generation: 1, Entries: e})
		}},
	} {
		require.NoError(t, tc.commit(sentinels(5, 7)), tc.name)
		require.NoError(t, tc.commit(sentinels(offsets.ResetEarliest, offsets.ResetLatest)), tc.name)
		require.Equal(t, sentinels(-2, -1), f.c.Committed(tc.group), tc.name)
		got, ok := f.c.CommittedOffset(tc.group, "orders", 0)
		require.True(t, ok, tc.name)
		require.Equal(t, int64(-2), got.Offset, tc.name)

		require.ErrorIs(t, tc.commit(sentinels(-1, -3)), offsets.ErrNegativeOffset, tc.name)
		require.ErrorIs(t, tc.commit(sentinels(-3, 4)), offsets.ErrNegativeOffset, tc.name)
		require.Equal(t, sentinels(-2, -1), f.c.Committed(tc.group), "%s: a refused commit stores nothing", tc.name)
	}
}

func TestCommitDoesNotRenewSession(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.joinSession("g", "a", 100*scale, "orders")
	f.advance(90)
	require.NoError(t, f.commit("g", "a", 1, "orders-0"))
	f.advance(11)
	require.Equal(t, []Expired{{Group: "g", MemberID: "a"}}, f.c.Expire())
}

func TestCommitDirectIsUnfenced(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.join("g", "a", "orders")

	// A manual-assignment consumer commits into a group with members.
	require.NoError(t, f.c.CommitDirect("g", entries("orders-1")))
	require.NoError(t, f.c.CommitDirect("manual", entries("payments-0")))
	require.Equal(t, []offsets.Entry{{Topic: "orders", Partition: 1, Offset: 10, LeaderEpoch: -1}}, f.c.Committed("g"))

	require.ErrorIs(t, f.c.CommitDirect("manual", entries("orders-4")), ErrUnknownTopic)
	require.ErrorIs(t, f.c.CommitDirect("manual", entries("nope-0")), ErrUnknownTopic)
	require.ErrorIs(t, f.c.CommitDirect("manual", []offsets.Entry{{Topic: "orders", Partition: -1}}), ErrUnknownTopic)
	require.ErrorIs(t, f.c.CommitDirect("manual", []offsets.Entry{{Topic: "orders", Partition: 0, Offset: -5}}), offsets.ErrNegativeOffset)
	require.ErrorIs(t, f.c.CommitDirect("manual", []offsets.Entry{{Topic: "orders", Partition: 0, Offset: -3}}), offsets.ErrNegativeOffset)
	require.Len(t, f.c.Committed("manual"), 1)
}

// recordingStore records commits in the order they are enqueued, which is
// the order the offsets store makes them durable, and counts enqueues made
// without the coordinator's lock held.
type recordingStore struct {
	*offsets.Memory
	coordinator *Coordinator
	mu          sync.Mutex
	enqueued    []offsets.Entry
	unlocked    int
}

func (s *recordingStore) Enqueue(group string, es []offsets.Entry) func() error {
	s.mu.Lock()
	s.enqueued = append(s.enqueued, es...)
	if s.coordinator.mu.TryLock() {
		s.coordinator.mu.Unlock()
		s.unlocked++
	}
	s.mu.Unlock()
	return s.Memory.Enqueue(group, es)
}

// TestCommitOrderFollowsMembershipChanges races committing members against
// joins and leaves that move partitions between them. Each commit carries
// the generation it was validated under in its metadata. Because commits
// are ordered under the same lock as rebalances, the enqueue order (which
// is the durability order) never shows a generation going backwards, and
// every commit was for a partition its member owned in that generation.
func TestCommitOrderFollowsMembershipChanges(t *testing.T) {
	t.Parallel()
	var rmu sync.Mutex
	owners := map[int32]map[string][]assignor.TopicPartition{}
	store := &recordingStore{Memory: offsets.NewMemory()}
	f := newFixtureWith(t, Config{Store: store, OnRebalance: func(r Rebalance) {
		rmu.Lock()
		owners[r.Generation] = r.Assignment
		rmu.Unlock()
	}})
	store.coordinator = f.c
	members := []string{"m0", "m1", "m2"}
	for _, m := range members {
		f.join("g", m, "orders")
	}

	var wg sync.WaitGroup
	stop := make(chan struct{})
	for _, m := range members {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				gen, parts, err := f.c.Assignment("g", m)
				if err != nil || len(parts) == 0 {
					continue
				}
				es := make([]offsets.Entry, len(parts))
				for j, tp := range parts {
					es[j] = offsets.Entry{Topic: tp.Topic, Partition: tp.Partition, Offset: int64(i),
						Metadata: m + "/" + strconv.Itoa(int(gen)), LeaderEpoch: offsets.NoLeaderEpoch}
				}
				err = f.c.Commit("g", m, gen, es)
				if err != nil {
					require.ErrorIs(t, err, ErrIllegalGeneration)
				}
			}
		})
	}
	for i := range 2000 {
		if i%2 == 0 {
			f.join("g", "churn", "orders")
		} else {
			f.c.Leave("g", "churn")
		}
	}
	close(stop)
	wg.Wait()

	store.mu.Lock()
	defer store.mu.Unlock()
	require.NotEmpty(t, store.enqueued)
	require.Zero(t, store.unlocked, "commits must be ordered under the coordinator's lock")
	last := int32(0)
	for i, e := range store.enqueued {
		member, genText, _ := strings.Cut(e.Metadata, "/")
		gen64, err := strconv.ParseInt(genText, 10, 32)
		require.NoError(t, err)
		gen := int32(gen64)
		require.GreaterOrEqual(t, gen, last, "commit %d (%s) enqueued after a commit of generation %d", i, e.Metadata, last)
		last = gen
		require.Contains(t, owners[gen][member], assignor.TopicPartition{Topic: e.Topic, Partition: e.Partition},
			fmt.Sprintf("commit %d: %s did not own %s-%d in generation %d", i, member, e.Topic, e.Partition, gen))
	}
}

// slowStore makes commits of one group wait until released.
type slowStore struct {
	*offsets.Memory
	slowGroup string
	waiting   chan struct{} // receives when a slow commit starts waiting
	release   chan struct{}
}

func (s *slowStore) Enqueue(group string, es []offsets.Entry) func() error {
	wait := s.Memory.Enqueue(group, es)
	if group != s.slowGroup {
		return wait
	}
	return func() error {
		s.waiting <- struct{}{}
		<-s.release
		return wait()
	}
}

func TestSlowDiskForOneGroupDoesNotDelayAnother(t *testing.T) {
	t.Parallel()
	store := &slowStore{Memory: offsets.NewMemory(), slowGroup: "A", waiting: make(chan struct{}), release: make(chan struct{})}
	f := newFixtureWith(t, Config{Store: store})
	f.join("A", "a", "orders")

	slowDone := make(chan error, 1)
	go func() { slowDone <- f.commit("A", "a", 1, "orders-0") }()
	<-store.waiting // group A's commit is now waiting on its "disk"

	fastDone := make(chan error, 1)
	go func() {
		res, err := f.c.Join(JoinRequest{Group: "B", MemberID: "b", SessionTimeout: time.Second, Topics: []string{"orders"}})
		if err == nil {
			err = f.c.Heartbeat("B", "b", res.Generation)
		}
		if err == nil {
			err = f.commit("B", "b", res.Generation, "orders-2")
		}
		if err == nil {
			err = f.c.Heartbeat("A", "a", 1) // group A itself is not locked either
		}
		fastDone <- err
	}()
	select {
	case err := <-fastDone:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("group B's join, heartbeat and commit waited on group A's disk")
	}
	select {
	case <-slowDone:
		t.Fatal("group A's commit returned before its write was durable")
	default:
	}
	close(store.release)
	require.NoError(t, <-slowDone)
	require.Len(t, f.c.Committed("A"), 1)
}

func TestCommitMetadataThatIsNotUTF8IsRejected(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.join("g", "a", "orders")
	err := f.c.Commit("g", "a", 1, []offsets.Entry{{Topic: "orders", Partition: 0, Offset: 1, Metadata: "\xff"}})
	require.ErrorIs(t, err, offsets.ErrInvalidEntry)
	require.Empty(t, f.c.Committed("g"))
}

// TestCommitRecordsTheCommitTime: each stored offset carries the clock's
// reading when it was committed (Kafka's commit timestamp), which offsets
// retention measures from; the caller's entries are not changed.
func TestCommitRecordsTheCommitTime(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	res := f.join("g", "a", "orders")
	_, err := f.clock.Advance(1234 * time.Millisecond)
	require.NoError(t, err)
	mine := entries("orders-1")
	require.NoError(t, f.c.Commit("g", "a", res.Generation, mine))
	require.Zero(t, mine[0].CommitTimestampMs)
	_, err = f.clock.Advance(time.Second)
	require.NoError(t, err)
	require.NoError(t, f.c.CommitDirect("manual", entries("orders-2")))
	require.Equal(t, int64(1234), f.c.Committed("g")[0].CommitTimestampMs)
	require.Equal(t, int64(2234), f.c.Committed("manual")[0].CommitTimestampMs)
}

// TestConsumerCommitStaleMemberEpoch: a consumer-protocol member commits
// at its own current epoch, not the group's (Kafka up to 4.2,
// ConsumerGroup.validateOffsetCommit).
func TestConsumerCommitStaleMemberEpoch(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.consumerJoin("g", "a", "orders")
	f.consumerJoin("g", "b", "orders") // group epoch 2; a lags at 1

	require.ErrorIs(t, f.commit("g", "a", 2, "orders-0"), ErrStaleMemberEpoch, "the group epoch is not a's")
	require.ErrorIs(t, f.commit("g", "a", 0, "orders-0"), ErrStaleMemberEpoch)
	require.NoError(t, f.commit("g", "a", 1, "orders-0"), "a lagging member commits what it keeps at its own epoch")
	_, err := f.consumerBeat("g", "a", 1)
	require.NoError(t, err)
	require.ErrorIs(t, f.commit("g", "a", 1, "orders-2"), ErrStaleMemberEpoch, "its old epoch is stale once it moved on")
	require.NoError(t, f.commit("g", "a", 2, "orders-2"))
	require.Len(t, f.c.Committed("g"), 2)
}

// TestConsumerCommitOwnership is the chapter's exercise 4 over KIP-848: a
// partition the new target moved away is no longer the lagging member's,
// even at its own epoch, and a member never commits another's partition.
func TestConsumerCommitOwnership(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.consumerJoin("g", "member-1", "orders")
	f.consumerJoin("g", "member-2", "orders")

	err := f.commit("g", "member-1", 1, "orders-1")
	require.ErrorIs(t, err, ErrNotPartitionOwner, "orders-1 went to member-2 with the new target")
	err = f.commit("g", "member-2", 2, "orders-3", "orders-0")
	require.ErrorIs(t, err, ErrNotPartitionOwner)
	err = f.commit("g", "member-2", 2, "orders-1", "payments-0")
	require.ErrorIs(t, err, ErrNotPartitionOwner, "a partition nobody subscribes to")
	require.Empty(t, f.c.Committed("g"), "all-or-nothing")
	require.NoError(t, f.commit("g", "member-2", 2, "orders-1", "orders-3"))
}

func TestConsumerCommitCheckOrder(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.consumerJoin("g", "a", "orders")
	cases := []struct {
		name string
		req  CommitRequest
		want error
	}{
		{"unknown member first", CommitRequest{Group: "g", MemberID: "z", Generation: 9, NoMemberEpoch: true, Entries: entries("orders-0")}, ErrUnknownMemberID},
		{"then the version", CommitRequest{Group: "g", MemberID: "a", Generation: 9, NoMemberEpoch: true, Entries: entries("orders-0")}, ErrUnsupportedVersion},
		{"then the epoch", CommitRequest{Group: "g", MemberID: "a", Generation: 9, Entries: entries("payments-0")}, ErrStaleMemberEpoch},
		{"then ownership", CommitRequest{Group: "g", MemberID: "a", Generation: 1, Entries: []offsets.Entry{{Topic: "payments", Offset: -3}}}, ErrNotPartitionOwner},
		{"then the offsets", CommitRequest{Group: "g", MemberID: "a", Generation: 1, Entries: []offsets.Entry{{Topic: "orders", Offset: -3}}}, offsets.ErrNegativeOffset},
	}
	for _, tc := range cases {
		require.ErrorIs(t, f.c.CommitMember(tc.req), tc.want, tc.name)
	}
	require.Empty(t, f.c.Committed("g"))
	require.NoError(t, f.c.CommitMember(CommitRequest{Group: "g", MemberID: "a", Generation: 1, Entries: entries("orders-3")}))
}
