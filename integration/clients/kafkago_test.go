package clients

// segmentio/kafka-go v0.4.51. Defaults that matter here: the Writer is NOT
// idempotent (kafka-go has no idempotent producer at all: it never sends
// InitProducerId), it does not wait for acknowledgements (RequiredAcks
// RequireNone, acks=0), its Balancer is RoundRobin (the key does not choose
// the partition: record i goes to partition i mod n), and it flushes a
// partial batch after BatchTimeout, 1 s. A group Reader starts at the first
// offset when the group has no commit and, with CommitInterval 0, commits
// each message synchronously inside ReadMessage before returning it.

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
)

// kafkagoProduce writes recs with one WriteMessages call on a Writer with
// kafka-go's defaults (only the client id and the loggers set).
func kafkagoProduce(t *testing.T, addr, topic string, recs []kv) {
	t.Helper()
	log := newClientLog(t, "kafka-go writer")
	w := &kafka.Writer{
		Addr:        kafka.TCP(addr),
		Topic:       topic,
		Transport:   &kafka.Transport{ClientID: "kafkago-producer"},
		Logger:      kafka.LoggerFunc(log.Printf),
		ErrorLogger: kafka.LoggerFunc(log.Printf),
	}
	msgs := make([]kafka.Message, len(recs))
	for i, r := range recs {
		msgs[i] = kafka.Message{Key: r.Key, Value: r.Value}
	}
	ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
	defer cancel()
	err := w.WriteMessages(ctx, msgs...)
	if cerr := w.Close(); cerr != nil {
		t.Errorf("kafka-go Writer Close: %v", cerr)
	}
	if err != nil {
		t.Fatalf("kafka-go WriteMessages: %v", err)
	}
}

// kafkagoJoin starts a kafka-go Reader in group. Only the client id, the
// loggers, the test's heartbeat interval and MaxWait differ from kafka-go's
// defaults: Close waits for the fetch in flight, and with the default
// MaxWait (10 s) every leave would take that long.
//
// policy chooses StartOffset, where a member starts when the group has no
// commit: FirstOffset (the default) or LastOffset. kafka-go has no reset
// policy for an out-of-range commit: below the log start it skips to the
// first offset, past the end it waits (see observe_test.go).
func kafkagoJoin(policy string) joinFunc {
	start := kafka.FirstOffset
	if policy == "latest" {
		start = kafka.LastOffset
	}
	return func(t *testing.T, addr, group, topic, id string, l *ledger) func() {
		return kafkagoMember(t, addr, group, topic, id, l, start)
	}
}

func kafkagoMember(t *testing.T, addr, group, topic, id string, l *ledger, start int64) func() {
	t.Helper()
	log := newClientLog(t, "kafka-go "+id)
	r := kafka.NewReader(kafka.ReaderConfig{
		Brokers:           []string{addr},
		GroupID:           group,
		Topic:             topic,
		Dialer:            &kafka.Dialer{ClientID: id, Timeout: 10 * time.Second},
		StartOffset:       start,
		HeartbeatInterval: heartbeat,
		MaxWait:           500 * time.Millisecond,
		Logger:            kafka.LoggerFunc(log.Printf),
		ErrorLogger:       kafka.LoggerFunc(log.Printf),
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			m, err := r.ReadMessage(ctx)
			if err != nil {
				if ctx.Err() != nil || errors.Is(err, context.Canceled) {
					return
				}
				log.Printf("test: ReadMessage: %v", err)
				continue
			}
			l.add(consumed{id, int32(m.Partition), m.Offset, m.Key, m.Value})
		}
	}()
	leave := sync.OnceFunc(func() {
		cancel()
		<-done
		if err := r.Close(); err != nil {
			t.Errorf("kafka-go Reader %s Close: %v", id, err)
		}
	})
	t.Cleanup(leave)
	return leave
}

func kafkagoClient() client {
	return client{name: "kafkago", produce: kafkagoProduce, join: kafkagoJoin("earliest"), reset: kafkagoJoin}
}

// TestKafkaGoProduce: 200 keyed records from a default Writer land once each,
// in order, record i on partition i mod 4 (round robin, whatever the key),
// with no producer id (not idempotent).
func TestKafkaGoProduce(t *testing.T) {
	t.Parallel()
	if w := (kafka.Writer{}); w.RequiredAcks != kafka.RequireNone || w.Balancer != nil {
		t.Fatal("kafka-go's Writer defaults changed: this file documents acks=0 and the RoundRobin balancer")
	}
	addr := startBroker(t, map[string]int32{topic: partitions})
	adm := newAdmin(t, addr)
	want := makeRecords(0, 200)
	kafkagoProduce(t, addr, topic, want)
	byKey := checkStored(t, readTopic(t, addr, adm, topic, len(want)), want)
	for i, r := range want {
		s := byKey[string(r.Key)]
		if s.Partition != int32(i%partitions) {
			t.Errorf("record %d on partition %d, round robin puts it on %d", i, s.Partition, i%partitions)
		}
		if s.ProducerID != -1 {
			t.Errorf("record %d: producer id %d, kafka-go is never idempotent", i, s.ProducerID)
		}
	}
}

// TestKafkaGoGroupConsumesEachRecordOnce: see testGroupOnce.
func TestKafkaGoGroupConsumesEachRecordOnce(t *testing.T) {
	t.Parallel()
	testGroupOnce(t, kafkagoClient())
}

// TestKafkaGoRebalance: see testGroupRebalance.
func TestKafkaGoRebalance(t *testing.T) {
	t.Parallel()
	testGroupRebalance(t, kafkagoClient())
}
