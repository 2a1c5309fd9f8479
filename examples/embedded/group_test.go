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

// startConsumer runs a kgo consumer of group "billing" on "orders",
// polling until the test ends.
func startConsumer(t *testing.T, ctx context.Context, b *broker.Broker, clientID string) *kgo.Client {
	t.Helper()
	client, err := kgo.NewClient(
		kgo.SeedBrokers(b.Addr()),
		kgo.ClientID(clientID),
		kgo.ConsumerGroup("billing"),
		kgo.ConsumeTopics("orders"),
		kgo.DisableAutoCommit(),
		kgo.HeartbeatInterval(100*time.Millisecond),
	)
	if err != nil {
		t.Fatal(err)
	}
	polled := make(chan struct{})
	go func() {
		defer close(polled)
		for !client.PollFetches(ctx).IsClientClosed() && ctx.Err() == nil {
		}
	}()
	t.Cleanup(func() {
		client.Close()
		<-polled
	})
	return client
}

// Two consumers share a topic: the test waits until the group is stable
// and reads who owns what.
func TestWaitForMyGroup(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b, err := broker.Start(ctx, broker.Config{Topics: map[string]int32{"orders": 4}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	startConsumer(t, ctx, b, "alpha")
	startConsumer(t, ctx, b, "beta")

	group, err := b.WaitGroupStable(ctx, "billing", 2)
	if err != nil {
		t.Fatal(err)
	}
	owners := map[int32]string{}
	for _, m := range group.Members {
		if len(m.Assignment) != 2 {
			t.Errorf("%s (client %s) owns %v, want two partitions", m.MemberID, m.ClientID, m.Assignment)
		}
		for _, tp := range m.Assignment {
			owners[tp.Partition] = m.ClientID
		}
	}
	want := map[int32]string{0: "alpha", 1: "beta", 2: "alpha", 3: "beta"} // round robin, by member id
	for p, client := range want {
		if owners[p] != client {
			t.Errorf("orders-%d is %q's, want %q's (group %s at generation %d)", p, owners[p], client, group.State, group.Generation)
		}
	}
}

// A control answers the consumer's commits itself: the consumer sees the
// control's code, and the broker stores nothing; once it is removed, a
// commit is stored and the group shows it.
func TestAnswerACommitMyself(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b, err := broker.Start(ctx, broker.Config{Topics: map[string]int32{"orders": 1}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	client := startConsumer(t, ctx, b, "alpha")
	if _, err := b.WaitGroupStable(ctx, "billing", 1); err != nil {
		t.Fatal(err)
	}

	refuse, err := b.ControlKey(kmsg.OffsetCommit.Int16(), func(cr *broker.ControlRequest) (kmsg.Response, error) {
		req := cr.Request.(*kmsg.OffsetCommitRequest)
		resp := req.ResponseKind().(*kmsg.OffsetCommitResponse)
		for _, rt := range req.Topics {
			topic := kmsg.OffsetCommitResponseTopic{Topic: rt.Topic}
			for _, p := range rt.Partitions {
				topic.Partitions = append(topic.Partitions, kmsg.OffsetCommitResponseTopicPartition{
					Partition: p.Partition, ErrorCode: kerr.RebalanceInProgress.Code,
				})
			}
			resp.Topics = append(resp.Topics, topic)
		}
		return resp, nil // answered here: the broker applies nothing
	})
	if err != nil {
		t.Fatal(err)
	}
	commit := func() int16 {
		code := make(chan int16, 1)
		client.CommitOffsetsSync(ctx, map[string]map[int32]kgo.EpochOffset{"orders": {0: {Epoch: -1, Offset: 5}}},
			func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
				if err != nil {
					t.Error(err)
					code <- -1
					return
				}
				code <- resp.Topics[0].Partitions[0].ErrorCode
			})
		return <-code
	}
	if code := commit(); code != kerr.RebalanceInProgress.Code {
		t.Fatalf("the commit got %v, want the control's REBALANCE_IN_PROGRESS", kerr.ErrorForCode(code))
	}
	if got := b.Group("billing").Committed; len(got) != 0 {
		t.Fatalf("committed %v after an answered commit", got)
	}

	refuse.Remove()
	if code := commit(); code != 0 {
		t.Fatalf("the commit got %v", kerr.ErrorForCode(code))
	}
	got := b.Group("billing").Committed
	if len(got) != 1 || got[0].Offset != 5 {
		t.Fatalf("committed %v, want orders-0 at 5", got)
	}
}
