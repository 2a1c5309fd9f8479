package clients

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/minibroker/minibroker/broker"
)

// startBroker is the seam between these tests and the broker they judge:
// minibroker's embedded broker (package broker), on 127.0.0.1 with a port
// the kernel picks (never a fixed one: make test must pass while another
// broker holds 9092), in memory, on the real clock, with topics (name ->
// partitions) and the KIP-848 heartbeat interval at 500 ms so that
// consumer-protocol members see a new assignment quickly. It stops the
// broker when the test ends and returns its bootstrap address. Nothing else
// in the package knows which broker runs (observe_test.go aside, which
// records what clients send through kfake's request hooks).
func startBroker(t *testing.T, topics map[string]int32) (addr string) {
	t.Helper()
	return startBrokerWith(t, broker.Config{Topics: topics})
}

// startBrokerWith is startBroker with cfg's other fields; the KIP-848
// heartbeat interval is 500 ms unless cfg sets one, and the logger is the
// test's. The broker logs at Info: its rebalances, fencing rejections and
// faults tell what a client did where the client's own log is silent
// (librdkafka's ends where Close begins, see rdkafkaConfig).
func startBrokerWith(t *testing.T, cfg broker.Config) (addr string) {
	t.Helper()
	log := newClientLog(t, "minibroker")
	if cfg.ConsumerHeartbeatInterval == 0 {
		cfg.ConsumerHeartbeatInterval = 500 * time.Millisecond
	}
	cfg.Logger = slog.New(slog.NewTextHandler(log, &slog.HandlerOptions{Level: slog.LevelInfo}))
	b, err := broker.Start(context.Background(), cfg)
	if err != nil {
		t.Fatalf("broker.Start: %v", err)
	}
	brokers.Store(b.Addr(), b)
	t.Cleanup(func() {
		brokers.Delete(b.Addr())
		if err := b.Close(); err != nil {
			t.Errorf("closing the broker: %v", err)
		}
	})
	return b.Addr()
}

// brokers maps the address of every running minibroker to it.
var brokers sync.Map // string -> *broker.Broker

// laggingMembers returns the members of group that still act on an older
// assignment than the group's: minibroker completes a rebalance at once,
// and a member learns of it only at its next heartbeat or join, so between
// the two the old owner of a moved partition still fetches it (the
// chapter's stale local view; docs/behavior-matrix.md). Kafka's join
// barrier has no such window, so for kfake there is nobody to wait for.
// The group scenarios wait for none to lag before they produce, so that
// exactly-once holds where it should, and the window itself is tested where
// it is the point (integration/kgo_four_states_test.go).
func laggingMembers(addr, group string) []string {
	v, ok := brokers.Load(addr)
	if !ok {
		return nil
	}
	view, _ := v.(*broker.Broker).Coordinator().Describe(group)
	var lagging []string
	for _, m := range view.Members {
		if m.KnownGeneration != view.Generation {
			lagging = append(lagging, fmt.Sprintf("%s (%d of %d)", m.ClientID, m.KnownGeneration, view.Generation))
		}
	}
	return lagging
}

// startKfake starts a one-broker kfake cluster on 127.0.0.1:0 with topics
// seeded, its warnings in the test's client log, and closes it at cleanup.
// The KIP-848 heartbeat interval is 500 ms instead of Kafka's 5 s so that
// consumer-protocol members see a new assignment quickly.
func startKfake(t *testing.T, topics map[string]int32) *kfake.Cluster {
	t.Helper()
	log := newClientLog(t, "kfake")
	opts := []kfake.Opt{
		kfake.NumBrokers(1),
		kfake.WithLogger(kfake.BasicLogger(log, kfake.LogLevelWarn)),
		kfake.BrokerConfigs(map[string]string{"group.consumer.heartbeat.interval.ms": "500"}),
	}
	for name, partitions := range topics {
		opts = append(opts, kfake.SeedTopics(partitions, name))
	}
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		t.Fatalf("kfake: %v", err)
	}
	t.Cleanup(c.Close)
	return c
}

// groupGeneration returns group's generation on the minibroker at addr
// (-1 for another broker): what a static member's restart must leave as
// it was.
func groupGeneration(addr, group string) int32 {
	v, ok := brokers.Load(addr)
	if !ok {
		return -1
	}
	view, _ := v.(*broker.Broker).Coordinator().Describe(group)
	return view.Generation
}

// brokerMember is one member of a group as the broker has it.
type brokerMember struct {
	MemberID string
	// Epoch is the member's epoch (of a classic member, the generation it
	// was last told) and GroupEpoch the group's: a member lags until its
	// next heartbeat moves it to the group epoch.
	Epoch, GroupEpoch int32
	// Assigned is what it holds at Epoch: topic -> sorted partitions.
	Assigned map[string][]int32
}

// brokerMemberOf returns the member of group whose client id is
// clientID, on the minibroker at addr; ok is false when the group has no
// such member, or addr is not a minibroker.
func brokerMemberOf(addr, group, clientID string) (m brokerMember, ok bool) {
	v, found := brokers.Load(addr)
	if !found {
		return m, false
	}
	view, _ := v.(*broker.Broker).Coordinator().Describe(group)
	for _, mv := range view.Members {
		if mv.ClientID != clientID {
			continue
		}
		m = brokerMember{MemberID: mv.MemberID, Epoch: mv.KnownGeneration, GroupEpoch: view.Generation, Assigned: map[string][]int32{}}
		for _, tp := range mv.Assignment {
			m.Assigned[tp.Topic] = append(m.Assigned[tp.Topic], tp.Partition)
		}
		for _, ps := range m.Assigned {
			slices.Sort(ps)
		}
		return m, true
	}
	return m, false
}

// injectFault puts f in force on the minibroker at addr, failing the test
// if there is none or f is invalid.
func injectFault(t *testing.T, addr string, f broker.Fault) *broker.InjectedFault {
	t.Helper()
	v, ok := brokers.Load(addr)
	if !ok {
		t.Fatalf("injectFault: no minibroker at %s", addr)
	}
	h, err := v.(*broker.Broker).InjectFault(f)
	if err != nil {
		t.Fatalf("InjectFault %+v: %v", f, err)
	}
	return h
}
