package server

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/clock"
	"github.com/minibroker/minibroker/coordinator"
	"github.com/minibroker/minibroker/testkit/coretest"
)

// BenchmarkFetchHandler measures the Fetch handler alone, without the socket: a
// fetch of 1 and of 16 partitions, each either at the high watermark
// (nothing to read: the handler's own cost) or at offset 0 of a partition
// holding one small batch. MaxWait is 0, so nothing waits.
func BenchmarkFetchHandler(b *testing.B) {
	for _, parts := range []int32{1, 16} {
		for _, data := range []bool{false, true} {
			name := fmt.Sprintf("partitions=%d/empty", parts)
			if data {
				name = fmt.Sprintf("partitions=%d/records", parts)
			}
			b.Run(name, func(b *testing.B) {
				srv := handlerBenchServer(b, parts)
				offset := int64(1) // the high watermark: one record per partition
				if data {
					offset = 0
				}
				req := fetchRequest(12, 0, "bench", offset)
				for p := range parts {
					fp := kmsg.NewFetchRequestTopicPartition()
					fp.Partition, fp.FetchOffset, fp.PartitionMaxBytes = p, offset, 1<<20
					req.Topics[0].Partitions = append(req.Topics[0].Partitions, fp)
				}
				r := &request{ctx: b.Context(), logger: srv.logger, clientID: "bench",
					peer: &peer{remote: "127.0.0.1:40000", host: "/127.0.0.1"}, key: kmsg.Fetch, version: 12}
				b.ReportAllocs()
				for b.Loop() {
					resp := srv.handleFetch(r, req).(*kmsg.FetchResponse)
					if resp.Topics[0].Partitions[0].ErrorCode != 0 {
						b.Fatalf("fetch: code %d", resp.Topics[0].Partitions[0].ErrorCode)
					}
				}
			})
		}
	}
}

// handlerBenchServer is a Server with a topic "bench" of parts partitions, each
// holding one record, in memory.
func handlerBenchServer(b *testing.B, parts int32) *Server {
	b.Helper()
	core := coretest.New(b, coretest.Config{Topics: map[string]int32{"bench": parts},
		Coordinator: coordinator.Config{Clock: clock.NewManual(time.UnixMilli(0))}})
	log := core.Log
	srv, err := New(Config{Coordinator: core.Coordinator, Catalog: core.Catalog, Log: log})
	if err != nil {
		b.Fatal(err)
	}
	for p := range parts {
		valid, err := log.Validate(batch("a record of some sixty bytes, as small events are"))
		if err != nil {
			b.Fatal(err)
		}
		pending, err := log.Append("bench", p, valid)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := pending.Wait(); err != nil {
			b.Fatal(err)
		}
	}
	return srv
}
