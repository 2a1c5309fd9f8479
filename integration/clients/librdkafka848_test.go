package clients

// librdkafka on KIP-848's consumer protocol (group.protocol=consumer), and
// how its close meets a heartbeat that moves its epoch.

import (
	"context"
	"fmt"
	"hash/crc32"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/broker"
	"github.com/minibroker/minibroker/wireclient"
)

// rdkafka848Client is librdkafka on KIP-848's consumer protocol: the broker
// assigns, and heartbeat and session settings are the broker's.
func rdkafka848Client() client {
	kip848 := kafka.ConfigMap{"group.protocol": "consumer"}
	return client{
		name:             "rdkafka848",
		produce:          rdkafkaProduce(nil),
		join:             rdkafkaJoin(kip848),
		reset:            rdkafkaReset(kip848),
		consumerProtocol: true,
	}
}

// rdkafkaCaughtUp waits until the consumer-protocol member id holds, in c,
// what the broker gave it at the group epoch, so that it can close.
//
// librdkafka 2.11.1 throws away a heartbeat answer that arrives once it has
// begun to leave, the member epoch in it too
// (rd_kafka_cgrp_handle_ConsumerGroupHeartbeat; 2.12.0 keeps the epoch).
// A Close that begins while the answer to a heartbeat that moves the
// member's epoch is on its way (as right after another member left)
// commits on unassign at the old epoch, which the broker refuses with
// STALE_MEMBER_EPOCH as Kafka 4.0 to 4.2 do
// (ConsumerGroup.validateOffsetCommit), and retries that commit at the old
// epoch, sending no heartbeat, until session.timeout.ms (45 s; not
// settable on this protocol) has passed: only then does it send its leave
// (rd_kafka_cgrp_try_terminate waits for outstanding commits).
//
// librdkafka applies an assignment only after it has read the answer's
// epoch, so a client whose Assignment is what the broker holds for it at
// the group epoch has taken the latest answer in. An answer that moves
// the epoch and no partition cannot be told apart this way; no scenario
// makes one just before a member closes. The wait is bounded by
// waitTimeout; past it the test fails and Close goes ahead.
func rdkafkaCaughtUp(t *testing.T, addr, group, id string, c *kafka.Consumer) {
	t.Helper()
	why, ok := await(context.Background(), func(context.Context) (bool, string) {
		m, member := brokerMemberOf(addr, group, id)
		if !member {
			return true, "" // gone, or not a minibroker: nothing to catch up with
		}
		parts, err := c.Assignment()
		if err != nil {
			return false, fmt.Sprintf("Assignment: %v", err)
		}
		held := make(map[string][]int32)
		for _, tp := range parts {
			held[*tp.Topic] = append(held[*tp.Topic], tp.Partition)
		}
		for _, ps := range held {
			slices.Sort(ps)
		}
		if m.Epoch != m.GroupEpoch || !maps.EqualFunc(held, m.Assigned, slices.Equal) {
			return false, fmt.Sprintf("it holds %v; the broker holds %v for it at epoch %d, group epoch %d", held, m.Assigned, m.Epoch, m.GroupEpoch)
		}
		return true, ""
	})
	if !ok {
		t.Errorf("librdkafka %s: not caught up with the broker within %v before Close: %s", id, waitTimeout, why)
	}
}

// heldHeartbeat is how long TestLibrdkafka848CloseWhileAHeartbeatMovesItsEpoch
// holds b's heartbeat, and slowHeartbeat the heartbeat interval its broker
// gives. The hold only has to outlast two steps of the test (a one-request
// leave and the start of b's Close) for the test to set up what it checks,
// and stay below the interval, which is also how long librdkafka waits for
// a heartbeat's answer before it gives up on it and sends another. b
// closes correctly whatever they are.
const (
	heldHeartbeat = 2 * time.Second
	slowHeartbeat = 3 * time.Second
)

// TestLibrdkafka848CloseWhileAHeartbeatMovesItsEpoch: a librdkafka
// consumer-protocol member b shares the partitions with a raw member, and
// consumes its share. A delay fault holds b's next heartbeat; the raw
// member leaves meanwhile (a new group epoch, whose target gives b every
// partition), and b is closed while that heartbeat, whose answer moves b
// to the new epoch, is held. b's leave waits for the answer
// (rdkafkaCaughtUp), then Close commits at the new epoch and leaves: Close
// returns, the group is Empty with no member, b consumed every record
// once, and the committed offsets are the last consumed offset + 1 of
// every partition. Closed at once, librdkafka 2.11.1 would throw the
// answer away and retry its close commit at the old epoch
// (STALE_MEMBER_EPOCH) for 45 s before it left, past the test's wait.
func TestLibrdkafka848CloseWhileAHeartbeatMovesItsEpoch(t *testing.T) {
	t.Parallel()
	cfg := broker.Config{Topics: map[string]int32{topic: partitions}}
	cfg.ConsumerHeartbeatInterval = slowHeartbeat
	cfg.ConsumerSessionTimeout = 10 * time.Minute // the raw member sends no heartbeat
	addr := startBrokerWith(t, cfg)
	adm := newAdmin(t, addr)
	c := rdkafka848Client()
	group, b, raw := "rdkafka848-close", "rdkafka848-b", "raw-member"
	l := newLedger()
	leaveB := c.join(t, addr, group, topic, b, l)
	waitSplit(t, addr, adm, true, group, topic, partitions, b)
	leaveRaw := joinRawConsumer(t, addr, group, raw)
	split := waitSplit(t, addr, adm, true, group, topic, partitions, b, raw)

	// Records only on b's partitions (consistent_random: CRC-32 of the
	// key): the raw member's stay empty, so that b, handed them just
	// before it closes, has nothing there that Close could fetch past the
	// application (confluent-kafka-go's Close polls, and the offsets of
	// what it polls are stored and committed).
	var mine []kv
	for _, r := range makeRecords(0, 80) {
		if slices.Contains(split[b], int32(crc32.ChecksumIEEE(r.Key)%partitions)) {
			mine = append(mine, r)
		}
	}
	c.produce(t, addr, topic, mine)
	st := readTopic(t, addr, adm, topic, len(mine))
	checkStored(t, st, mine)
	l.wait(t, len(mine))

	before, _ := brokerMemberOf(addr, group, b)
	held := injectFault(t, addr, broker.Fault{Keys: []int16{int16(kmsg.ConsumerGroupHeartbeat)}, Group: group,
		Member: before.MemberID, Delay: heldHeartbeat, Count: 1})
	poll(t, b+"'s next heartbeat held", func(context.Context) (bool, string) {
		return held.Hits() == 1, "no heartbeat from it yet"
	})
	leaveRaw()
	if now, _ := brokerMemberOf(addr, group, b); now.Epoch != before.Epoch || now.GroupEpoch != before.GroupEpoch+1 {
		t.Fatalf("as %s begins to close: member epoch %d, group epoch %d; want %d and %d (its heartbeat held, the raw member gone)",
			b, now.Epoch, now.GroupEpoch, before.Epoch, before.GroupEpoch+1)
	}
	leaveB()

	ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
	defer cancel()
	described, err := adm.DescribeConsumerGroups(ctx, group)
	if err != nil {
		t.Fatalf("DescribeConsumerGroups: %v", err)
	}
	if g := described[group]; g.State != "Empty" || len(g.Members) != 0 {
		t.Errorf("after %s closed the group is %s with members %v, want Empty with none (its leave arrived)", b, g.State, g.Members)
	}
	got := l.all()
	checkConsumed(t, got, st)
	if want, have := nextOffsets(got), committed(t, adm, group, topic); !maps.Equal(have, want) {
		t.Errorf("committed %v, want last consumed + 1 = %v", have, want)
	}
}

// joinRawConsumer joins group as a consumer-protocol member over a raw
// connection with client id id, subscribed to topic, and returns its
// leave (ConsumerGroupHeartbeat v1 at epoch -1), which fails the test
// unless it is answered without an error. The member sends nothing in
// between: its session must outlast the test.
func joinRawConsumer(t *testing.T, addr, group, id string) (leave func()) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
	defer cancel()
	conn, err := wireclient.Dial(ctx, addr, id)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	heartbeat := func(ctx context.Context, epoch int32) *kmsg.ConsumerGroupHeartbeatResponse {
		req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		req.Version = 1
		req.Group, req.MemberID, req.MemberEpoch = group, id+"-member", epoch
		if epoch == 0 {
			req.RebalanceTimeoutMillis = 60000
			req.SubscribedTopicNames = []string{topic}
			req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		}
		resp, err := conn.Request(ctx, req)
		if err != nil {
			t.Fatalf("%s ConsumerGroupHeartbeat at epoch %d: %v", id, epoch, err)
		}
		r := resp.(*kmsg.ConsumerGroupHeartbeatResponse)
		if r.ErrorCode != 0 {
			t.Fatalf("%s ConsumerGroupHeartbeat at epoch %d: error code %d", id, epoch, r.ErrorCode)
		}
		return r
	}
	if joined := heartbeat(ctx, 0); joined.MemberEpoch <= 0 {
		t.Fatalf("%s joined at epoch %d", id, joined.MemberEpoch)
	}
	return func() {
		t.Helper()
		ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
		defer cancel()
		if left := heartbeat(ctx, -1); left.MemberEpoch != -1 {
			t.Fatalf("%s left at epoch %d, want -1", id, left.MemberEpoch)
		}
	}
}
