// Command hello-group joins the consumer group "hello" on topic orders,
// prints the partitions minibroker assigns it, and leaves.
//
// With the broker running (make run), in another terminal:
//
//	go run ./examples/hello-group
//
// --consumer-protocol joins over Kafka 4's consumer protocol (KIP-848)
// instead of the classic one, as kgo does it: kgo.ServerSideBalancer with
// a range or sticky balancer. The member id is then the client's own (a
// random one), and the number printed is the member epoch.
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
	consumerProtocol := flag.Bool("consumer-protocol", false, "join over Kafka 4's consumer protocol (KIP-848) instead of the classic one")
	flag.Parse()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := run(ctx, *broker, *consumerProtocol, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "hello-group:", err)
		os.Exit(1)
	}
}

// run joins the group, prints the first assignment and closes the client,
// which leaves the group.
func run(ctx context.Context, broker string, consumerProtocol bool, out io.Writer) error {
	assigned := make(chan map[string][]int32, 1)
	opts := []kgo.Opt{
		kgo.SeedBrokers(broker), // 127.0.0.1:9092 unless --broker says otherwise
		// One client id per instance (its start time in base 36): member
		// ids start with it, and the live page ties this instance's fetch
		// positions to its member.
		kgo.ClientID("hello-group-" + strconv.FormatInt(time.Now().UnixMilli(), 36)),
		kgo.ConsumerGroup("hello"),
		kgo.ConsumeTopics("orders"),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, parts map[string][]int32) {
			select {
			case assigned <- parts:
			default:
			}
		}),
	}
	number := "generation"
	if consumerProtocol {
		// Kafka 4's consumer protocol (KIP-848): the broker assigns, and a
		// member learns of a rebalance from its next heartbeat. kgo speaks
		// it only with both options (and a broker that offers it); without
		// them it stays on the classic protocol, without a word.
		opts = append(opts, kgo.ServerSideBalancer(), kgo.Balancers(kgo.RangeBalancer()))
		number = "epoch"
	}
	client, err := kgo.NewClient(opts...)
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
			fmt.Fprintf(out, "member %s, %s %d: %s %v\n", member, number, generation, topic, ps)
		}
		return nil
	case <-ctx.Done():
		return fmt.Errorf("no assignment from %s: %w", broker, ctx.Err())
	}
}
