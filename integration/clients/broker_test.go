package clients

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"
)

// startBroker is the seam between these tests and the broker they judge. It
// starts one broker on 127.0.0.1 with a port the kernel picks (never a fixed
// one: make test must pass while another broker holds 9092), creates topics
// (name -> partitions), stops the broker when the test ends and returns its
// bootstrap address. Nothing else in the package knows which broker runs
// (observe_test.go aside, which stays on kfake).
//
// It starts kfake today, because minibroker has no records yet. Once
// Produce, Fetch, ListOffsets and InitProducerId land (DESIGN.md section 8),
// this function will start minibroker's embedded broker instead (package
// broker, section 7): in memory, on the real clock, with the KIP-848
// heartbeat interval at 500 ms as here (the --consumer-heartbeat-interval
// setting; take the field names from package broker once it exists):
//
//	b, err := broker.Start(t.Context(), broker.Config{
//		Topics:                    topics,
//		ConsumerHeartbeatInterval: 500 * time.Millisecond,
//	})
//	if err != nil {
//		t.Fatalf("broker.Start: %v", err)
//	}
//	t.Cleanup(func() { _ = b.Close() })
//	return b.Addr()
func startBroker(t *testing.T, topics map[string]int32) (addr string) {
	t.Helper()
	return startKfake(t, topics).ListenAddrs()[0]
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
