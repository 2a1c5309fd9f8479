// Command produce puts records in a topic for process-and-commit to
// consume: --count records (default 10) with values "<prefix>-0",
// "<prefix>-1", ..., spread round-robin over the topic's partitions, and
// prints where each landed as "partition offset value".
//
// With the broker running (make run):
//
//	go run ./examples/process-and-commit/produce --count 12
//
// Flags: --broker (default 127.0.0.1:9092), --topic (default orders),
// --count (default 10), --prefix (default "record").
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

func main() {
	brokers := flag.String("broker", "127.0.0.1:9092", "minibroker address, HOST:PORT (a comma-separated list for several seeds)")
	topic := flag.String("topic", "orders", "topic to produce to")
	count := flag.Int("count", 10, "how many records")
	prefix := flag.String("prefix", "record", "values are <prefix>-<n>")
	flag.Parse()

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := run(ctx, strings.Split(*brokers, ","), *topic, *prefix, *count, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "produce:", err)
		os.Exit(1)
	}
}

// run produces count records to topic and prints where each landed.
func run(ctx context.Context, brokers []string, topic, prefix string, count int, out io.Writer) error {
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(brokers...),
		// One client id per instance (its start time in base 36), as every
		// example has: the live page tells runs apart.
		kgo.ClientID("process-and-commit-produce-"+strconv.FormatInt(time.Now().UnixMilli(), 36)),
		kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner()),
	)
	if err != nil {
		return err
	}
	defer cl.Close()
	recs := make([]*kgo.Record, count)
	for i := range recs {
		recs[i] = &kgo.Record{Value: []byte(prefix + "-" + strconv.Itoa(i))}
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		return err
	}
	for _, r := range recs {
		fmt.Fprintf(out, "%d %d %s\n", r.Partition, r.Offset, r.Value)
	}
	return nil
}
