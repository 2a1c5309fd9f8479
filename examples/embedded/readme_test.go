// Package embedded shows minibroker running inside another module's
// go test: a real kgo consumer against an in-process broker that the test
// can fence on demand. It is a module of its own, so it sees only the
// public API.
package embedded

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/minibroker/minibroker/broker"
)

// The README's example, whole: a kgo consumer joins, the test fences it.
func TestFenceMyConsumer(t *testing.T) {
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

	lost := make(chan struct{}, 1)
	client, err := kgo.NewClient(
		kgo.SeedBrokers(b.Addr()),
		kgo.ConsumerGroup("billing"),
		kgo.ConsumeTopics("orders"),
		kgo.HeartbeatInterval(100*time.Millisecond),
		kgo.OnPartitionsLost(func(context.Context, *kgo.Client, map[string][]int32) {
			select {
			case lost <- struct{}{}:
			default:
			}
		}),
	)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	go func() { // polling drives the join and the heartbeats
		for !client.PollFetches(ctx).IsClientClosed() && ctx.Err() == nil {
		}
	}()

	// Until the rebalance is over: one member, which has its assignment.
	group, err := b.WaitGroupStable(ctx, "billing", 1)
	if err != nil {
		t.Fatal(err)
	}
	member := group.Members[0]
	if len(member.Assignment) != 4 {
		t.Fatalf("%s owns %v, want orders 0-3", member.MemberID, member.Assignment)
	}
	if err := b.ExpireMember("billing", member.MemberID); err != nil { // fenced now
		t.Fatal(err)
	}
	select {
	case <-lost: // its next heartbeat was refused
	case <-ctx.Done():
		t.Fatal("the consumer never learned it was fenced")
	}
}
