// Command hello-group joins the consumer group "hello" on topic orders,
// prints the partitions minibroker assigns it, and leaves.
//
// With the broker running (make run), in another terminal:
//
//	go run ./examples/hello-group
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

func main() {
	broker := flag.String("broker", "127.0.0.1:9092", "minibroker address")
	flag.Parse()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := run(ctx, *broker, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "hello-group:", err)
		os.Exit(1)
	}
}

// run joins the group, prints the first assignment and closes the client,
// which leaves the group.
func run(ctx context.Context, broker string, out io.Writer) error {
	assigned := make(chan map[string][]int32, 1)
	client, err := kgo.NewClient(
		kgo.SeedBrokers(broker), // 127.0.0.1:9092 unless --broker says otherwise
		// One client id per instance (its start time in base 36): member
		// ids start with it, and the live page ties this instance's fetch
		// positions to its member.
		kgo.ClientID("hello-group-"+strconv.FormatInt(time.Now().UnixMilli(), 36)),
		kgo.ConsumerGroup("hello"),
		kgo.ConsumeTopics("orders"),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, parts map[string][]int32) {
			select {
			case assigned <- parts:
			default:
			}
		}),
	)
	if err != nil {
		return err
	}
	defer client.Close()

	// Polling drives the group: the join, the sync and the heartbeats.
	go func() {
		for !client.PollFetches(ctx).IsClientClosed() && ctx.Err() == nil {
		}
	}()
	select {
	case parts := <-assigned:
		member, generation := client.GroupMetadata()
		for topic, ps := range parts {
			slices.Sort(ps)
			fmt.Fprintf(out, "member %s, generation %d: %s %v\n", member, generation, topic, ps)
		}
		return nil
	case <-ctx.Done():
		return fmt.Errorf("no assignment from %s: %w", broker, ctx.Err())
	}
}
