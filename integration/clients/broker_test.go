package clients

import (
	"context"
	"log/slog"
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
	log := newClientLog(t, "minibroker")
	b, err := broker.Start(context.Background(), broker.Config{
		Topics:                    topics,
		ConsumerHeartbeatInterval: 500 * time.Millisecond,
		Logger:                    slog.New(slog.NewTextHandler(log, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	if err != nil {
		t.Fatalf("broker.Start: %v", err)
	}
	t.Cleanup(func() {
		if err := b.Close(); err != nil {
			t.Errorf("closing the broker: %v", err)
		}
	})
	return b.Addr()
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
