package clients

// librdkafka 2.11.1, the static build bundled with confluent-kafka-go v2.11.1
// (cgo). Defaults that matter here: the producer is NOT idempotent
// (enable.idempotence=false) but waits for all replicas (acks=all), the
// partitioner is consistent_random (CRC-32 of the key, modulo the partition
// count), consumers start at the LATEST offset when the group has no commit
// (auto.offset.reset=largest), and offsets are stored as Poll returns them
// and committed every 5 s and on Close.

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"hash/crc32"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
)

// rdkafkaConfig returns a config for addr whose log goes to a test log,
// drained by a goroutine until the returned stop runs (after the client's
// Close: librdkafka's forwarder blocks on a full channel). The log ends
// where Close begins: confluent-kafka-go stops forwarding it then, so what
// a client does while it closes shows only in the broker's log.
func rdkafkaConfig(t *testing.T, addr, id, debug string) (kafka.ConfigMap, *clientLog, func()) {
	t.Helper()
	log := newClientLog(t, "librdkafka "+id)
	logs := make(chan kafka.LogEvent, 1000)
	quit := make(chan struct{})
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		for {
			select {
			case ev := <-logs:
				log.Printf("%s %d %s: %s", ev.Name, ev.Level, ev.Tag, ev.Message)
			case <-quit:
				return
			}
		}
	}()
	cfg := kafka.ConfigMap{
		"bootstrap.servers":      addr,
		"client.id":              id,
		"go.logs.channel.enable": true,
		"go.logs.channel":        logs,
	}
	if debug != "" {
		cfg["debug"] = debug
	}
	return cfg, log, sync.OnceFunc(func() { close(quit); <-drained })
}

// rdkafkaProduce produces recs with librdkafka's default producer settings
// plus extra, waits for every delivery report and checks each succeeded.
func rdkafkaProduce(extra kafka.ConfigMap) func(t *testing.T, addr, topic string, recs []kv) {
	return func(t *testing.T, addr, topic string, recs []kv) {
		t.Helper()
		cfg, _, stopLog := rdkafkaConfig(t, addr, "rdkafka-producer", "msg,eos")
		for k, v := range extra {
			cfg[k] = v
		}
		p, err := kafka.NewProducer(&cfg)
		if err != nil {
			stopLog()
			t.Fatalf("kafka.NewProducer: %v", err)
		}
		defer stopLog()
		defer p.Close()
		reports := make(chan kafka.Event, len(recs))
		for _, r := range recs {
			m := &kafka.Message{
				TopicPartition: kafka.TopicPartition{Topic: &topic, Partition: kafka.PartitionAny},
				Key:            r.Key,
				Value:          r.Value,
			}
			if err := p.Produce(m, reports); err != nil {
				t.Fatalf("librdkafka Produce %s: %v", r.Key, err)
			}
		}
		timeout := time.After(waitTimeout)
		for range recs {
			select {
			case ev := <-reports:
				m, ok := ev.(*kafka.Message)
				if !ok {
					t.Fatalf("librdkafka delivery report: %v", ev)
				}
				if m.TopicPartition.Error != nil {
					t.Fatalf("librdkafka delivery of %s: %v", m.Key, m.TopicPartition.Error)
				}
			case <-timeout:
				t.Fatalf("librdkafka: no delivery reports for %d records within %v", len(recs), waitTimeout)
			}
		}
	}
}

// rdkafkaJoin starts a librdkafka consumer in group. It sets
// auto.offset.reset=earliest (the default, latest, would race the
// producer) and, on the classic protocol, the test's heartbeat interval;
// auto commits run every 100 ms instead of 5 s so that the scenarios' waits
// for commits are short, and fetches wait at most 100 ms instead of 500 ms
// for data (Close waits for the fetch in flight). extra is added last. On
// the consumer protocol the returned leave closes the client only once it
// holds what the broker gave it (rdkafkaCaughtUp).
func rdkafkaJoin(extra kafka.ConfigMap) func(t *testing.T, addr, group, topic, id string, l *ledger) func() {
	return func(t *testing.T, addr, group, topic, id string, l *ledger) func() {
		t.Helper()
		cfg, log, stopLog := rdkafkaConfig(t, addr, id, "cgrp")
		cfg["group.id"] = group
		cfg["auto.offset.reset"] = "earliest"
		cfg["auto.commit.interval.ms"] = 100
		cfg["fetch.wait.max.ms"] = 100
		if extra["group.protocol"] != "consumer" {
			cfg["heartbeat.interval.ms"] = int(heartbeat / time.Millisecond)
		}
		for k, v := range extra {
			cfg[k] = v
		}
		c, err := kafka.NewConsumer(&cfg)
		if err != nil {
			stopLog()
			t.Fatalf("kafka.NewConsumer: %v", err)
		}
		if err := c.Subscribe(topic, nil); err != nil {
			c.Close()
			stopLog()
			t.Fatalf("librdkafka Subscribe: %v", err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			for ctx.Err() == nil {
				switch ev := c.Poll(50).(type) {
				case *kafka.Message:
					l.add(consumed{id, ev.TopicPartition.Partition, int64(ev.TopicPartition.Offset), ev.Key, ev.Value})
				case kafka.Error:
					log.Printf("test: Poll: %v", ev)
				}
			}
		}()
		leave := sync.OnceFunc(func() {
			if cfg["group.protocol"] == "consumer" && !t.Failed() {
				rdkafkaCaughtUp(t, addr, group, id, c) // Poll still serves the assignment
			}
			cancel()
			<-done
			closed := make(chan error, 1)
			go func() { closed <- c.Close() }() // commits the stored offsets, leaves
			select {
			case err := <-closed:
				if err != nil {
					t.Errorf("librdkafka %s Close: %v", id, err)
				}
				stopLog()
			case <-time.After(waitTimeout):
				// Leave the client and its log forwarder running: the
				// test fails with the logs instead of hanging.
				state := "the broker has no member of that client id"
				if m, in := brokerMemberOf(addr, group, id); in {
					state = fmt.Sprintf("the broker still has it at epoch %d (group epoch %d) holding %v", m.Epoch, m.GroupEpoch, m.Assigned)
				}
				t.Errorf("librdkafka %s Close: not closed within %v; %s", id, waitTimeout, state)
			}
		})
		t.Cleanup(leave)
		return leave
	}
}

func rdkafkaClient() client {
	return client{name: "rdkafka", produce: rdkafkaProduce(nil), join: rdkafkaJoin(nil), reset: rdkafkaReset(nil)}
}

// rdkafkaReset returns joinFuncs with auto.offset.reset=policy added to
// extra.
func rdkafkaReset(extra kafka.ConfigMap) func(policy string) joinFunc {
	return func(policy string) joinFunc {
		cfg := kafka.ConfigMap{"auto.offset.reset": policy}
		for k, v := range extra {
			cfg[k] = v
		}
		return rdkafkaJoin(cfg)
	}
}

// TestLibrdkafkaProduce: 200 keyed records from librdkafka's producer, with
// its defaults and with enable.idempotence=true. Every record lands once, in
// order, on the partition consistent_random picks (CRC-32 of the key mod 4);
// only the idempotent producer's batches carry a producer id.
func TestLibrdkafkaProduce(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		extra      kafka.ConfigMap
		idempotent bool
	}{
		{"defaults", nil, false},
		{"idempotent", kafka.ConfigMap{"enable.idempotence": true}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			addr := startBroker(t, map[string]int32{topic: partitions})
			adm := newAdmin(t, addr)
			want := makeRecords(0, 200)
			rdkafkaProduce(tc.extra)(t, addr, topic, want)
			byKey := checkStored(t, readTopic(t, addr, adm, topic, len(want)), want)
			for _, r := range want {
				s := byKey[string(r.Key)]
				if p := int32(crc32.ChecksumIEEE(r.Key) % partitions); s.Partition != p {
					t.Errorf("%s on partition %d, consistent_random says %d", r.Key, s.Partition, p)
				}
				if got := s.ProducerID >= 0; got != tc.idempotent {
					t.Errorf("%s: producer id %d, idempotent %v", r.Key, s.ProducerID, tc.idempotent)
				}
			}
		})
	}
}

// TestLibrdkafkaGroupConsumesEachRecordOnce: see testGroupOnce, on the
// classic protocol and on KIP-848's consumer protocol
// (group.protocol=consumer).
func TestLibrdkafkaGroupConsumesEachRecordOnce(t *testing.T) {
	t.Parallel()
	t.Run("classic", func(t *testing.T) {
		t.Parallel()
		testGroupOnce(t, rdkafkaClient())
	})
	t.Run("consumer", func(t *testing.T) {
		t.Parallel()
		testGroupOnce(t, rdkafka848Client())
	})
}

// TestLibrdkafkaRebalance: see testGroupRebalance, on both protocols.
func TestLibrdkafkaRebalance(t *testing.T) {
	t.Parallel()
	t.Run("classic", func(t *testing.T) {
		t.Parallel()
		testGroupRebalance(t, rdkafkaClient())
	})
	t.Run("consumer", func(t *testing.T) {
		t.Parallel()
		testGroupRebalance(t, rdkafka848Client())
	})
}

// TestLibrdkafkaStaticMemberRestart: a librdkafka consumer with
// group.instance.id closes (a static member does not leave) and starts
// again: it gets its partitions back at the same generation, and the other
// member's share never moves.
func TestLibrdkafkaStaticMemberRestart(t *testing.T) {
	t.Parallel()
	addr := startBroker(t, map[string]int32{topic: partitions})
	adm := newAdmin(t, addr)
	group := "rdkafka-static"
	a, b := "rdkafka-a", "rdkafka-b"
	static := rdkafkaJoin(kafka.ConfigMap{"group.instance.id": "rdkafka-a-instance"})
	l := newLedger()
	leaveA := static(t, addr, group, topic, a, l)
	rdkafkaJoin(nil)(t, addr, group, topic, b, l)
	split := waitSplit(t, addr, adm, false, group, topic, partitions, a, b)
	gen := groupGeneration(addr, group)
	if want := []int32{0, 2}; !slices.Equal(split[a], want) {
		t.Fatalf("split %v: the static member sorts first and should hold %v", split, want)
	}

	memberOf := func(ctx context.Context) (id, instance string) {
		described, err := adm.DescribeGroups(ctx, group)
		if err != nil {
			return "", ""
		}
		for _, m := range described[group].Members {
			if m.ClientID == a && m.InstanceID != nil {
				return m.MemberID, *m.InstanceID
			}
		}
		return "", ""
	}
	before, instance := memberOf(context.Background())
	if instance != "rdkafka-a-instance" {
		t.Fatalf("DescribeGroups names instance %q for %s, want rdkafka-a-instance", instance, a)
	}
	leaveA()
	static(t, addr, group, topic, a, l)
	poll(t, "the restart replacing "+before, func(ctx context.Context) (bool, string) {
		id, _ := memberOf(ctx)
		return id != "" && id != before, "member " + id
	})
	again := waitSplit(t, addr, adm, false, group, topic, partitions, a, b)
	if !maps.EqualFunc(again, split, slices.Equal) {
		t.Errorf("after the restart the split is %v, before it was %v", again, split)
	}
	if now := groupGeneration(addr, group); now != gen {
		t.Errorf("generation %d after the restart, %d before: a static restart is no rebalance", now, gen)
	}
}

// TestLibrdkafkaTransactionCommitAndAbort: librdkafka's transactional
// producer (transactional.id) commits a transaction of three records over two
// partitions and a group's offset (SendOffsetsToTransaction: AddOffsetsToTxn
// and TxnOffsetCommit), then aborts one of two records and another offset. A
// read_committed consumer reads exactly the committed records, a
// read_uncommitted one reads all five; in both the markers take offsets
// (partition 0: c0 c2 commit a4 abort; partition 1: c1 commit a3 abort). The
// group's committed offset is the first transaction's.
func TestLibrdkafkaTransactionCommitAndAbort(t *testing.T) {
	t.Parallel()
	const txnTopic = "rdkafka-txn"
	addr := startBroker(t, map[string]int32{txnTopic: 2})
	cfg, _, stopLog := rdkafkaConfig(t, addr, "rdkafka-txn-producer", "eos,protocol")
	cfg["transactional.id"] = "rdkafka-txn"
	p, err := kafka.NewProducer(&cfg)
	if err != nil {
		stopLog()
		t.Fatalf("kafka.NewProducer: %v", err)
	}
	defer stopLog()
	defer p.Close()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	if err := p.InitTransactions(ctx); err != nil {
		t.Fatalf("librdkafka InitTransactions: %v", err)
	}
	const group = "rdkafka-txn-group"
	meta, err := kafka.NewTestConsumerGroupMetadata(group)
	if err != nil {
		t.Fatalf("kafka.NewTestConsumerGroupMetadata: %v", err)
	}
	transact := func(commit bool, offset int64, recs ...rdkafkaTxnRecord) {
		t.Helper()
		if err := p.BeginTransaction(); err != nil {
			t.Fatalf("librdkafka BeginTransaction: %v", err)
		}
		tp := []kafka.TopicPartition{{Topic: &recs[0].topic, Partition: 1, Offset: kafka.Offset(offset)}}
		if err := p.SendOffsetsToTransaction(ctx, tp, meta); err != nil {
			t.Fatalf("librdkafka SendOffsetsToTransaction: %v", err)
		}
		reports := make(chan kafka.Event, len(recs))
		for _, r := range recs {
			m := &kafka.Message{
				TopicPartition: kafka.TopicPartition{Topic: &r.topic, Partition: r.partition},
				Value:          []byte(r.value),
			}
			if err := p.Produce(m, reports); err != nil {
				t.Fatalf("librdkafka Produce %s: %v", r.value, err)
			}
		}
		if commit {
			// CommitTransaction flushes: every record is delivered first.
			if err := p.CommitTransaction(ctx); err != nil {
				t.Fatalf("librdkafka CommitTransaction: %v", err)
			}
			for range recs {
				select {
				case ev := <-reports:
					if m, ok := ev.(*kafka.Message); !ok || m.TopicPartition.Error != nil {
						t.Fatalf("librdkafka delivery report in a committed transaction: %v", ev)
					}
				case <-ctx.Done():
					t.Fatalf("librdkafka: no delivery reports within %v", waitTimeout)
				}
			}
			return
		}
		if err := p.Flush(int(waitTimeout / time.Millisecond)); err != 0 {
			t.Fatalf("librdkafka Flush: %d records not delivered", err)
		}
		if err := p.AbortTransaction(ctx); err != nil {
			t.Fatalf("librdkafka AbortTransaction: %v", err)
		}
	}
	transact(true, 42, rdkafkaTxnRecord{txnTopic, 0, "c0"}, rdkafkaTxnRecord{txnTopic, 1, "c1"}, rdkafkaTxnRecord{txnTopic, 0, "c2"})
	transact(false, 99, rdkafkaTxnRecord{txnTopic, 1, "a3"}, rdkafkaTxnRecord{txnTopic, 0, "a4"})

	committed := rdkafkaReadAll(t, addr, txnTopic, "read_committed", 3)
	want := []rdkafkaRead{{0, 0, "c0"}, {0, 1, "c2"}, {1, 0, "c1"}}
	if !slices.Equal(committed, want) {
		t.Errorf("read_committed read %v, want %v", committed, want)
	}
	all := rdkafkaReadAll(t, addr, txnTopic, "read_uncommitted", 5)
	want = []rdkafkaRead{{0, 0, "c0"}, {0, 1, "c2"}, {0, 3, "a4"}, {1, 0, "c1"}, {1, 2, "a3"}}
	if !slices.Equal(all, want) {
		t.Errorf("read_uncommitted read %v, want %v (markers at 0:2, 0:4, 1:1, 1:3)", all, want)
	}
	adm := newAdmin(t, addr)
	offsets, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		t.Fatalf("FetchOffsets: %v", err)
	}
	if o, ok := offsets.Lookup(txnTopic, 1); !ok || o.At != 42 {
		t.Errorf("group %s committed %+v for partition 1, want 42 (the aborted transaction's 99 discarded)", group, o)
	}
	ends, err := adm.ListEndOffsets(ctx, txnTopic)
	if err != nil {
		t.Fatalf("ListEndOffsets: %v", err)
	}
	for part, end := range map[int32]int64{0: 5, 1: 4} {
		if o, _ := ends.Lookup(txnTopic, part); o.Offset != end {
			t.Errorf("partition %d ends at %d, want %d (records and markers)", part, o.Offset, end)
		}
	}
}

type rdkafkaTxnRecord struct {
	topic     string
	partition int32
	value     string
}

type rdkafkaRead struct {
	Partition int32
	Offset    int64
	Value     string
}

// rdkafkaReadAll assigns every partition of topic (2) from the start to a
// librdkafka consumer at isolation level isolation and polls until it has
// read n records and both partitions are at their end (librdkafka reports
// the end once a fetch reaches the high watermark, or at read_committed the
// last stable offset), or the wait times out. It returns them sorted by
// partition and offset.
func rdkafkaReadAll(t *testing.T, addr, topic, isolation string, n int) []rdkafkaRead {
	t.Helper()
	cfg, _, stopLog := rdkafkaConfig(t, addr, "rdkafka-"+isolation, "")
	cfg["group.id"] = "rdkafka-" + isolation
	cfg["isolation.level"] = isolation
	cfg["enable.auto.commit"] = false
	cfg["enable.partition.eof"] = true
	cfg["fetch.wait.max.ms"] = 100
	c, err := kafka.NewConsumer(&cfg)
	if err != nil {
		stopLog()
		t.Fatalf("kafka.NewConsumer: %v", err)
	}
	defer stopLog()
	defer c.Close()
	parts := []kafka.TopicPartition{
		{Topic: &topic, Partition: 0, Offset: kafka.OffsetBeginning},
		{Topic: &topic, Partition: 1, Offset: kafka.OffsetBeginning},
	}
	if err := c.Assign(parts); err != nil {
		t.Fatalf("librdkafka Assign: %v", err)
	}
	var got []rdkafkaRead
	atEnd := map[int32]bool{}
	deadline := time.Now().Add(waitTimeout)
	for len(got) < n || len(atEnd) < len(parts) {
		if time.Now().After(deadline) {
			t.Fatalf("librdkafka %s: read %v and reached the end of %v within %v, want %d records", isolation, got, atEnd, waitTimeout, n)
		}
		switch ev := c.Poll(50).(type) {
		case *kafka.Message:
			got = append(got, rdkafkaRead{ev.TopicPartition.Partition, int64(ev.TopicPartition.Offset), string(ev.Value)})
		case kafka.PartitionEOF:
			atEnd[ev.Partition] = true
		case kafka.Error:
			t.Logf("librdkafka %s Poll: %v", isolation, ev)
		}
	}
	slices.SortFunc(got, func(a, b rdkafkaRead) int {
		if a.Partition != b.Partition {
			return int(a.Partition - b.Partition)
		}
		return int(a.Offset - b.Offset)
	})
	return got
}

// TestLibrdkafkaProduceOverMaxFrameBytes: librdkafka producing a 20 MiB
// record (message.max.bytes raised so that it sends it) to a broker with
// the default 16 MiB --max-frame-bytes gets the broker's
// MSG_SIZE_TOO_LARGE in its delivery report, not a retry for ever, and
// the record is not stored.
func TestLibrdkafkaProduceOverMaxFrameBytes(t *testing.T) {
	t.Parallel()
	addr := startBroker(t, map[string]int32{"big": 1})
	cfg, _, stopLog := rdkafkaConfig(t, addr, "rdkafka-big", "msg,protocol")
	cfg["message.max.bytes"] = 32 << 20
	p, err := kafka.NewProducer(&cfg)
	if err != nil {
		stopLog()
		t.Fatalf("kafka.NewProducer: %v", err)
	}
	defer stopLog()
	defer p.Close()
	value := make([]byte, 20<<20)
	_, _ = rand.Read(value)
	topicName := "big"
	reports := make(chan kafka.Event, 1)
	if err := p.Produce(&kafka.Message{TopicPartition: kafka.TopicPartition{Topic: &topicName, Partition: 0}, Value: value}, reports); err != nil {
		t.Fatalf("librdkafka refused the record itself, so the broker never saw it: %v", err)
	}
	select {
	case ev := <-reports:
		m, ok := ev.(*kafka.Message)
		if !ok {
			t.Fatalf("librdkafka delivery report: %v", ev)
		}
		var kerr kafka.Error
		if !errors.As(m.TopicPartition.Error, &kerr) || kerr.Code() != kafka.ErrMsgSizeTooLarge {
			t.Fatalf("delivery report error %v, want MSG_SIZE_TOO_LARGE", m.TopicPartition.Error)
		}
	case <-time.After(2 * waitTimeout):
		t.Fatalf("librdkafka: no delivery report for the 20 MiB record within %v: the producer retries", 2*waitTimeout)
	}
	if end := endOffsets(t, newAdmin(t, addr), "big"); end[0] != 0 {
		t.Errorf("log end %d, want 0: nothing stored", end[0])
	}
}
