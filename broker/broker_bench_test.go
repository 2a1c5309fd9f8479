package broker_test

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/broker"
	"github.com/minibroker/minibroker/broker/adminapi"
	"github.com/minibroker/minibroker/records"
	"github.com/minibroker/minibroker/wireclient"
)

// BenchmarkFetchOverTheWire measures a Fetch of four partitions, each
// holding one small batch, from offset 0, over a loopback connection: the
// whole path a consumer's fetch takes, with the admin API off and on (on,
// the admin side's recorder watches every request).
func BenchmarkFetchOverTheWire(b *testing.B) {
	for _, admin := range []string{"", "127.0.0.1:0"} {
		name := "admin=off"
		if admin != "" {
			name = "admin=on"
		}
		b.Run(name, func(b *testing.B) {
			br, err := broker.Start(b.Context(), broker.Config{Topics: map[string]int32{"bench": 4}, Admin: admin, AdminAPI: adminapi.New})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { br.Close() })
			ctx, cancel := context.WithTimeout(b.Context(), time.Minute)
			defer cancel()
			c, err := wireclient.Dial(ctx, br.Addr(), "bench")
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			produce := kmsg.NewPtrProduceRequest()
			produce.Version, produce.Acks, produce.TimeoutMillis = 9, -1, 5000
			pt := kmsg.ProduceRequestTopic{Topic: "bench"}
			for p := range int32(4) {
				value := []byte("a record of some sixty bytes, as small events are")
				batch := records.EncodeBatch(records.BatchSpec{FirstTimestamp: time.Now().UnixMilli(), Records: []records.Record{{Value: value}}})
				pt.Partitions = append(pt.Partitions, kmsg.ProduceRequestTopicPartition{Partition: p, Records: batch})
			}
			produce.Topics = []kmsg.ProduceRequestTopic{pt}
			if _, err := c.Request(ctx, produce); err != nil {
				b.Fatal(err)
			}
			fetch := kmsg.NewPtrFetchRequest()
			fetch.Version, fetch.MaxBytes = 12, 1<<20
			ft := kmsg.FetchRequestTopic{Topic: "bench"}
			for p := range int32(4) {
				fp := kmsg.NewFetchRequestTopicPartition()
				fp.Partition, fp.PartitionMaxBytes = p, 1<<20
				ft.Partitions = append(ft.Partitions, fp)
			}
			fetch.Topics = []kmsg.FetchRequestTopic{ft}
			b.ReportAllocs()
			for b.Loop() {
				resp, err := c.Request(ctx, fetch)
				if err != nil {
					b.Fatal(err)
				}
				if p := resp.(*kmsg.FetchResponse).Topics[0].Partitions[3]; p.ErrorCode != 0 || len(p.RecordBatches) == 0 {
					b.Fatalf("fetch: code %d, %d bytes", p.ErrorCode, len(p.RecordBatches))
				}
			}
		})
	}
}
