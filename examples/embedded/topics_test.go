package embedded

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/minibroker/minibroker/broker"
	"github.com/minibroker/minibroker/topics"
)

// Topics with configs, at start and later, and what their partitions
// hold.
func TestTopicsWithConfigs(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b, err := broker.Start(ctx, broker.Config{
		Topics:       map[string]int32{"orders": 1},
		TopicConfigs: map[string]map[string]string{"orders": {"max.message.bytes": "1024"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := b.CreateTopic("audit", 2, map[string]string{"retention.bytes": "1048576"}); err != nil {
		t.Fatal(err)
	}
	err = b.CreateTopic("compacted", 1, map[string]string{"cleanup.policy": "compact"})
	if !errors.Is(err, topics.ErrInvalidConfig) {
		t.Fatalf("got %v, want INVALID_CONFIG", err)
	}

	client, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.ProducerBatchCompression(kgo.NoCompression())) // 2 KiB stays 2 KiB
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	big := &kgo.Record{Topic: "orders", Value: bytes.Repeat([]byte("x"), 2048)}
	if err := client.ProduceSync(ctx, big).FirstErr(); !errors.Is(err, kerr.MessageTooLarge) {
		t.Fatalf("a 2 KiB record to orders got %v, want MESSAGE_TOO_LARGE", err)
	}
	if err := client.ProduceSync(ctx, &kgo.Record{Topic: "orders", Value: []byte("small")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	parts, err := b.Partitions("orders")
	if err != nil {
		t.Fatal(err)
	}
	if p := parts[0]; p.LogStartOffset != 0 || p.HighWatermark != 1 || p.LastStableOffset != 1 || p.Leader != 0 {
		t.Fatalf("orders-0 is %+v, want one record from offset 0 on node 0", p)
	}
}

// An invalid setting is a *broker.SettingsError outside this module too.
func TestSettingsErrorFromOutside(t *testing.T) {
	_, err := broker.Start(context.Background(), broker.Config{
		ServerSettings: broker.ServerSettings{MaxFetchWait: -time.Second},
	})
	var se *broker.SettingsError
	if !errors.As(err, &se) {
		t.Fatalf("got %v (%T), want a *broker.SettingsError", err, err)
	}
	if se.Scope != "server" || se.Field != "MaxFetchWait" || se.Problem != "must be positive, got -1s" {
		t.Fatalf("got %+v", *se)
	}
}
