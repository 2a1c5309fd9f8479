package clients

// IBM/sarama v1.61.1. Defaults that matter here: Config.Version 2.8.0
// (request versions follow it, not the broker's ApiVersions ranges), the
// producer is NOT idempotent (Producer.Idempotent false, acks=1), the
// partitioner hashes the key with FNV-1a, consumers start at the NEWEST
// offset when the group has no commit (Consumer.Offsets.Initial), and offsets
// are committed by a 1 s timer and when a session ends.

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
)

// saramaLogs routes sarama's one process-wide Logger to the logs of the
// sarama tests running now. sarama has no per-client logger; the router is
// installed once, before the first sarama client, so no client ever reads the
// variable while it is written.
var saramaLogs = sync.OnceValue(func() *saramaRouter {
	r := &saramaRouter{logs: make(map[*clientLog]struct{})}
	sarama.Logger = r
	return r
})

// saramaRouter writes each line to every registered log: with parallel
// tests a failing test's log may hold another sarama test's lines too.
type saramaRouter struct {
	mu   sync.Mutex // guards logs
	logs map[*clientLog]struct{}
}

func (r *saramaRouter) each(fn func(*clientLog)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for l := range r.logs {
		fn(l)
	}
}

func (r *saramaRouter) Print(v ...any)   { r.each(func(l *clientLog) { l.Print(v...) }) }
func (r *saramaRouter) Println(v ...any) { r.each(func(l *clientLog) { l.Println(v...) }) }
func (r *saramaRouter) Printf(format string, v ...any) {
	r.each(func(l *clientLog) { l.Printf(format, v...) })
}

// saramaLog registers a log for this test's sarama output.
func saramaLog(t *testing.T) {
	t.Helper()
	l := newClientLog(t, "sarama")
	r := saramaLogs()
	r.mu.Lock()
	r.logs[l] = struct{}{}
	r.mu.Unlock()
	t.Cleanup(func() {
		r.mu.Lock()
		delete(r.logs, l)
		r.mu.Unlock()
	})
}

// saramaProduce sends recs with a SyncProducer built from sarama's default
// config (Return.Successes must be on for a SyncProducer) adjusted by tune.
func saramaProduce(tune func(*sarama.Config)) func(t *testing.T, addr, topic string, recs []kv) {
	return func(t *testing.T, addr, topic string, recs []kv) {
		t.Helper()
		saramaLog(t)
		cfg := sarama.NewConfig()
		cfg.ClientID = "sarama-producer"
		cfg.Producer.Return.Successes = true
		if tune != nil {
			tune(cfg)
		}
		p, err := sarama.NewSyncProducer([]string{addr}, cfg)
		if err != nil {
			t.Fatalf("sarama.NewSyncProducer: %v", err)
		}
		msgs := make([]*sarama.ProducerMessage, len(recs))
		for i, r := range recs {
			msgs[i] = &sarama.ProducerMessage{Topic: topic, Key: sarama.ByteEncoder(r.Key), Value: sarama.ByteEncoder(r.Value)}
		}
		err = p.SendMessages(msgs)
		if cerr := p.Close(); cerr != nil {
			t.Errorf("sarama producer Close: %v", cerr)
		}
		if err != nil {
			t.Fatalf("sarama SendMessages: %v", err)
		}
	}
}

// saramaIdempotent is what sarama requires for Producer.Idempotent.
func saramaIdempotent(cfg *sarama.Config) {
	cfg.Producer.Idempotent = true
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Net.MaxOpenRequests = 1
}

// saramaHandler reports each claimed message to the ledger and marks it, so
// the offset manager commits it.
type saramaHandler struct {
	id string
	l  *ledger
}

func (h saramaHandler) Setup(sarama.ConsumerGroupSession) error   { return nil }
func (h saramaHandler) Cleanup(sarama.ConsumerGroupSession) error { return nil }

func (h saramaHandler) ConsumeClaim(sess sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	for {
		select {
		case m, ok := <-claim.Messages():
			if !ok {
				return nil
			}
			h.l.add(consumed{h.id, m.Partition, m.Offset, m.Key, m.Value})
			sess.MarkMessage(m, "")
		case <-sess.Context().Done():
			return nil
		}
	}
}

// saramaJoin returns a joinFunc for sarama ConsumerGroup members that reset
// to policy: Consumer.Offsets.Initial OffsetOldest or OffsetNewest (the
// default; the scenarios use oldest, as newest would race the producer). It
// also sets the test's heartbeat interval and a 100 ms auto commit.
func saramaJoin(policy string) joinFunc {
	initial := sarama.OffsetOldest
	if policy == "latest" {
		initial = sarama.OffsetNewest
	}
	return func(t *testing.T, addr, group, topic, id string, l *ledger) func() {
		return saramaMember(t, addr, group, topic, id, l, initial)
	}
}

func saramaMember(t *testing.T, addr, group, topic, id string, l *ledger, initial int64) func() {
	t.Helper()
	saramaLog(t)
	cfg := sarama.NewConfig()
	cfg.ClientID = id
	cfg.Consumer.Offsets.Initial = initial
	cfg.Consumer.Group.Heartbeat.Interval = heartbeat
	cfg.Consumer.Offsets.AutoCommit.Interval = 100 * time.Millisecond
	cg, err := sarama.NewConsumerGroup([]string{addr}, group, cfg)
	if err != nil {
		t.Fatalf("sarama.NewConsumerGroup: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			if err := cg.Consume(ctx, []string{topic}, saramaHandler{id, l}); err != nil {
				if errors.Is(err, sarama.ErrClosedConsumerGroup) {
					return
				}
				sarama.Logger.Printf("test: %s Consume: %v", id, err)
			}
		}
	}()
	leave := sync.OnceFunc(func() {
		cancel()
		<-done // the session ended: marked offsets are committed
		if err := cg.Close(); err != nil {
			t.Errorf("sarama %s Close: %v", id, err)
		}
	})
	t.Cleanup(leave)
	return leave
}

func saramaClient() client {
	return client{name: "sarama", produce: saramaProduce(nil), join: saramaJoin("earliest"), reset: saramaJoin}
}

// TestSaramaProduce: 200 keyed records from a SyncProducer, with sarama's
// defaults and in idempotent mode. Every record lands once, in order, on the
// partition sarama's hash partitioner picks for its key; only the idempotent
// producer's batches carry a producer id.
func TestSaramaProduce(t *testing.T) {
	t.Parallel()
	if sarama.NewConfig().Producer.Idempotent {
		t.Fatal("sarama's default producer is idempotent; this file documents that it is not")
	}
	for _, tc := range []struct {
		name       string
		tune       func(*sarama.Config)
		idempotent bool
	}{
		{"defaults", nil, false},
		{"idempotent", saramaIdempotent, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			addr := startBroker(t, map[string]int32{topic: partitions})
			adm := newAdmin(t, addr)
			want := makeRecords(0, 200)
			saramaProduce(tc.tune)(t, addr, topic, want)
			byKey := checkStored(t, readTopic(t, addr, adm, topic, len(want)), want)

			hash := sarama.NewHashPartitioner(topic)
			for _, r := range want {
				s := byKey[string(r.Key)]
				p, err := hash.Partition(&sarama.ProducerMessage{Key: sarama.ByteEncoder(r.Key)}, partitions)
				if err != nil {
					t.Fatal(err)
				}
				if s.Partition != p {
					t.Errorf("%s on partition %d, sarama's hash partitioner says %d", r.Key, s.Partition, p)
				}
				if got := s.ProducerID >= 0; got != tc.idempotent {
					t.Errorf("%s: producer id %d, idempotent %v", r.Key, s.ProducerID, tc.idempotent)
				}
			}
		})
	}
}

// TestSaramaGroupConsumesEachRecordOnce: see testGroupOnce.
func TestSaramaGroupConsumesEachRecordOnce(t *testing.T) {
	t.Parallel()
	testGroupOnce(t, saramaClient())
}

// TestSaramaRebalance: see testGroupRebalance.
func TestSaramaRebalance(t *testing.T) {
	t.Parallel()
	testGroupRebalance(t, saramaClient())
}
