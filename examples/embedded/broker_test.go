// Package embedded shows minibroker running inside another module's
// go test: a real kgo consumer against an in-process broker that the test
// can fence on demand.
package embedded

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/broker"
)

// TestConsumerSeesItsFencing: a kgo group member joins and commits; the
// test ends its session with ExpireMember; the client loses its
// partitions and the group moves to a new generation.
func TestConsumerSeesItsFencing(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b, err := broker.Start(ctx, broker.Config{
		Topics:      map[string]int32{"orders": 4},
		ManualClock: true, // sessions end only when the test says so
	})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()

	assigned := make(chan map[string][]int32, 8)
	lost := make(chan map[string][]int32, 8)
	client, err := kgo.NewClient(
		kgo.SeedBrokers(b.Addr()),
		kgo.ConsumerGroup("billing"),
		kgo.ConsumeTopics("orders"),
		kgo.HeartbeatInterval(100*time.Millisecond),
		kgo.DisableAutoCommit(),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, p map[string][]int32) { assigned <- p }),
		kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, p map[string][]int32) { lost <- p }),
	)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()

	select {
	case p := <-assigned:
		if len(p["orders"]) != 4 {
			t.Fatalf("assigned %v, want all four partitions of orders", p)
		}
	case <-ctx.Done():
		t.Fatal("no assignment")
	}
	memberID, generation := client.GroupMetadata()

	// Commit offset 42 of orders-0 as this member of this generation.
	commit := map[string]map[int32]kgo.EpochOffset{"orders": {0: {Epoch: -1, Offset: 42}}}
	client.CommitOffsetsSync(ctx, commit, func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
		if err == nil {
			err = kerr.ErrorForCode(resp.Topics[0].Partitions[0].ErrorCode)
		}
		if err != nil {
			t.Errorf("commit: %v", err)
		}
	})

	// Fence the member now, as if its session had timed out.
	if err := b.ExpireMember("billing", memberID); err != nil {
		t.Fatal(err)
	}
	select {
	case p := <-lost: // its next heartbeat was refused
		t.Logf("member %s lost %v", memberID, p)
	case <-ctx.Done():
		t.Fatal("the client never learned it was fenced")
	}
	group, _ := b.Coordinator().Describe("billing")
	if group.Generation <= generation {
		t.Fatalf("group generation %d, want past %d", group.Generation, generation)
	}
	if e, _ := b.Coordinator().CommittedOffset("billing", "orders", 0); e.Offset != 42 {
		t.Fatalf("committed offset %d, want 42: a fenced member's earlier commits stay", e.Offset)
	}
}
