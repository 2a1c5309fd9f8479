package integration

// What a member's commit on close meets after another member has left.
// Under the chapter's synchronous coordinator a leave completes a
// rebalance at once, so the generation a classic member still carries is
// stale: its commit in OnPartitionsRevoked is fenced, and what it
// processed since its last commit is replayed by the next owner. Under
// the consumer protocol a leave changes no other member's epoch, and the
// commit lands. (Kafka's classic coordinator accepts it: the leave only
// starts a rebalance, and the generation moves on once every member has
// re-joined.) Matrix row leave-fences-close-commit.

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/minibroker/minibroker/broker"
	"github.com/minibroker/minibroker/internal/testutil"
)

// closeCommitHeartbeat is long enough that no heartbeat lands while the
// test acts: the member's generation or epoch is the one it joined with.
const closeCommitHeartbeat = 5 * time.Second

func TestKgoCloseCommitAfterAnotherMemberLeft(t *testing.T) {
	for _, tc := range []struct {
		name     string
		consumer bool  // KIP-848's consumer protocol
		wantErr  error // b's commit on close
		stored   bool  // whether b's commit is stored
	}{
		{"classic", false, kerr.IllegalGeneration, false},
		{"consumer", true, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := startBroker(t, kgoConfig(map[string]int32{"orders": 2}), func(cfg *broker.Config) {
				cfg.ConsumerHeartbeatInterval, cfg.ConsumerSessionTimeout = closeCommitHeartbeat, 30*time.Second
			})
			produceTo(t, b, "orders", 0, "a0", "a1")
			produceTo(t, b, "orders", 1, "b0", "b1")

			member := func(name string, opts ...kgo.Opt) *kgo.Client {
				opts = append([]kgo.Opt{
					kgo.SeedBrokers(b.Addr()), kgo.ClientID(name), kgo.ConsumerGroup("close-commit"),
					kgo.ConsumeTopics("orders"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
					kgo.DisableAutoCommit(), kgo.Balancers(kgo.RangeBalancer()), // the consumer protocol needs range or sticky
					kgo.SessionTimeout(30 * time.Second), kgo.HeartbeatInterval(closeCommitHeartbeat),
					kgo.FetchMaxWait(kgoFetchMaxWait),
				}, opts...)
				if tc.consumer {
					opts = append(opts, kgo.ServerSideBalancer())
				}
				cl, err := kgo.NewClient(opts...)
				require.NoError(t, err)
				t.Cleanup(cl.Close)
				return cl
			}
			a := member("a")
			waitMembers(t, b, "close-commit", 1)
			committedOnClose := make(chan error, 1)
			bcl := member("b", kgo.OnPartitionsRevoked(func(ctx context.Context, cl *kgo.Client, _ map[string][]int32) {
				committedOnClose <- cl.CommitUncommittedOffsets(ctx)
			}))

			// b consumes both records of the partition it owns: orders-1
			// on the classic protocol (member ids a-000001 and b-000002
			// sort a first); on the consumer protocol the client makes
			// its member id up, so either.
			ctx, cancel := context.WithTimeout(context.Background(), kgoWait)
			defer cancel()
			var got []string
			owned := int32(-1)
			for len(got) < 2 {
				fetches := bcl.PollFetches(ctx)
				require.NoError(t, ctx.Err(), "b consumed %v", got)
				fetches.EachRecord(func(r *kgo.Record) {
					require.True(t, owned < 0 || owned == r.Partition, "b owns one partition")
					owned = r.Partition
					got = append(got, string(r.Value))
				})
			}
			require.Equal(t, [][]string{{"a0", "a1"}, {"b0", "b1"}}[owned], got)
			if !tc.consumer {
				require.Equal(t, int32(1), owned)
			}

			a.Close() // leaves
			bcl.Close()
			select {
			case err := <-committedOnClose:
				if tc.wantErr == nil {
					require.NoError(t, err)
				} else {
					require.True(t, errors.Is(err, tc.wantErr), "b's commit on close: %v, want %v", err, tc.wantErr)
				}
			case <-ctx.Done():
				t.Fatal("b never committed on close")
			}
			fetched, err := b.admin(t).FetchOffsets(ctx, "close-commit")
			require.NoError(t, err)
			have := map[int32]int64{}
			fetched.Each(func(o kadm.OffsetResponse) {
				if o.At >= 0 {
					have[o.Partition] = o.At
				}
			})
			want := map[int32]int64{}
			if tc.stored {
				want[owned] = 2
			}
			require.Equal(t, want, have)
		})
	}
}

// produceTo produces values to one partition of topic, in order.
func produceTo(t *testing.T, b *testBroker, topic string, partition int32, values ...string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.ClientID("producer"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	require.NoError(t, err)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), kgoWait)
	defer cancel()
	var recs []*kgo.Record
	for _, v := range values {
		recs = append(recs, &kgo.Record{Topic: topic, Partition: partition, Value: []byte(v)})
	}
	require.NoError(t, cl.ProduceSync(ctx, recs...).FirstErr())
}

// waitMembers waits until group has n members.
func waitMembers(t *testing.T, b *testBroker, group string, n int) {
	t.Helper()
	testutil.Eventually(t, kgoWait, func() string {
		if have := len(b.describe(group).Members); have != n {
			return fmt.Sprintf("%s has %d members, want %d", group, have, n)
		}
		return ""
	})
}
