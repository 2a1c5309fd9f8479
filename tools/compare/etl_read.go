package compare

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kgo"
)

// endKey marks the end of a topic: readToEnd writes one record with it to
// every partition once the members are gone, and reads until it has met
// each. A plain record is visible to a read_committed reader only once
// every transaction before it has ended, so meeting it means the
// partition was read to its end at either isolation level.
const endKey = "etl-end"

// readToEnd reads every partition of topic from the start to its end
// (read_committed when committed is set) and returns how many times each
// key appears.
func readToEnd(ctx context.Context, addr, topic string, partitions int32, committed bool) (map[string]int, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), etlDrainTimeout)
	defer cancel()
	prod, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ClientID("etl-end"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		return nil, err
	}
	defer prod.Close()
	ends := make([]*kgo.Record, partitions)
	for p := range partitions {
		ends[p] = &kgo.Record{Topic: topic, Partition: p, Key: []byte(endKey)}
	}
	if err := prod.ProduceSync(ctx, ends...).FirstErr(); err != nil {
		return nil, fmt.Errorf("mark the end of %s: %w", topic, err)
	}
	from := map[int32]kgo.Offset{}
	for p := range partitions {
		from[p] = kgo.NewOffset().AtStart()
	}
	isolation := kgo.ReadUncommitted()
	if committed {
		isolation = kgo.ReadCommitted()
	}
	reader, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ClientID("etl-reader"),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: from}),
		kgo.FetchIsolationLevel(isolation), kgo.FetchMaxWait(etlFetchMaxWait))
	if err != nil {
		return nil, err
	}
	defer reader.Close()
	counts := map[string]int{}
	ended := map[int32]bool{}
	for int32(len(ended)) < partitions {
		fs := reader.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("read %s to its end: %d of %d partitions ended: %w", topic, len(ended), partitions, err)
		}
		for _, fe := range fs.Errors() {
			return nil, fmt.Errorf("read %s: %w", topic, fe.Err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if string(r.Key) == endKey {
				ended[r.Partition] = true
				return
			}
			counts[string(r.Key)]++
		})
	}
	return counts, nil
}
