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

// The README's fault example, whole: the broker drops a kgo consumer's
// heartbeats, its lease runs out on the manual clock, and its commit is
// refused while it goes on consuming.
func TestCutMyConsumerOff(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b, err := broker.Start(ctx, broker.Config{Topics: map[string]int32{"orders": 1}, ManualClock: true})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()

	assigned := make(chan struct{}, 1)
	client, err := kgo.NewClient(
		kgo.SeedBrokers(b.Addr()),
		kgo.ConsumerGroup("billing"),
		kgo.ConsumeTopics("orders"),
		kgo.DisableAutoCommit(),
		kgo.SessionTimeout(10*time.Second),
		kgo.HeartbeatInterval(100*time.Millisecond),
		kgo.RequestTimeoutOverhead(time.Second), // how long kgo waits for a lost answer
		kgo.OnPartitionsAssigned(func(context.Context, *kgo.Client, map[string][]int32) { assigned <- struct{}{} }),
	)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	go func() {
		for !client.PollFetches(ctx).IsClientClosed() && ctx.Err() == nil {
		}
	}()
	select {
	case <-assigned:
	case <-ctx.Done():
		t.Fatal("no assignment")
	}

	memberID, _ := client.GroupMetadata()
	f, err := b.InjectFault(broker.Fault{
		Keys: []int16{12}, Group: "billing", Member: memberID, // its heartbeats
		Drop:  true, // never answered
		Count: -1,   // until removed
	})
	if err != nil {
		t.Fatal(err)
	}
	for f.Hits() == 0 && ctx.Err() == nil { // until one heartbeat is lost
		time.Sleep(10 * time.Millisecond)
	}
	b.Advance(10*time.Second + time.Millisecond) // past its session
	if expired := b.Expire(); len(expired) != 1 || expired[0].MemberID != memberID {
		t.Fatalf("expired %v, want %s", expired, memberID)
	}

	// The consumer was not told: it commits as the member it was.
	refused := make(chan int16, 1)
	go client.CommitOffsetsSync(ctx, map[string]map[int32]kgo.EpochOffset{"orders": {0: {Epoch: -1, Offset: 1}}},
		func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
			if err != nil {
				t.Error(err)
			}
			refused <- resp.Topics[0].Partitions[0].ErrorCode
		})
	f.Remove() // its requests get through again; the commit is still the zombie's
	// The group is empty now: the chapter refuses the commit as a rebalance
	// in progress (with another member, ILLEGAL_GENERATION).
	if code := <-refused; code != kerr.RebalanceInProgress.Code {
		t.Fatalf("the zombie's commit got %v", kerr.ErrorForCode(code))
	}
}
