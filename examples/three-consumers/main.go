// Command three-consumers runs three franz-go (kgo) consumers in one
// consumer group against minibroker and prints each member's assignment as
// members come and go.
//
// Start the broker in one terminal (it serves topics orders:4 and payments:1
// on 127.0.0.1:9092), then run the example in another:
//
//	make run
//	go run ./examples/three-consumers
//
// Flag: --broker HOST:PORT, the broker to use (default 127.0.0.1:9092).
//
// The three consumers join group "demo" on topic orders. Every
// OnPartitionsAssigned, OnPartitionsRevoked and OnPartitionsLost callback
// prints one line. Once the group has settled (every live member holds the
// same generation, and their partitions are disjoint and cover the topic),
// a "settled:" line shows who owns what; a few seconds later one consumer
// closes, then another, and the example exits after the last one settles
// alone. minibroker assigns round-robin over the sorted member ids itself,
// so the output is the same on every run:
//
//	settled: 3 members: consumer-a=orders[0 3] consumer-b=orders[1] consumer-c=orders[2]
//	settled: 2 members: consumer-b=orders[0 2] consumer-c=orders[1 3]
//	settled: 1 member: consumer-c=orders[0 1 2 3]
//
// What the other lines show: minibroker completes a rebalance the moment a
// member joins or leaves, so the other members learn of it from their next
// heartbeat, which carries the old generation and is answered
// ILLEGAL_GENERATION. kgo treats that as a lost session: OnPartitionsLost
// with everything the member owned, a "session error" from PollFetches,
// then a re-join that returns the new generation and assignment. A Kafka
// broker would instead answer REBALANCE_IN_PROGRESS while it waits for every
// member to re-join, and kgo would revoke rather than lose the partitions.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// The group and topic of the demo, and its timings.
const (
	group = "demo"
	topic = "orders"

	// pause is how long a settled group is left alone before the next
	// member closes.
	pause = 2 * time.Second
	// settleTimeout bounds each wait for the group to settle.
	settleTimeout = 30 * time.Second
)

func main() {
	broker := flag.String("broker", "127.0.0.1:9092", "minibroker address, HOST:PORT")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *broker, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "three-consumers:", err)
		os.Exit(1)
	}
}

// run runs the demo against the broker at addr, writing every line to out,
// and returns once the last consumer has closed.
func run(ctx context.Context, addr string, out io.Writer) error {
	// This run's client ids start with its name and its start time in
	// base 36: member ids start with them, so the live page tells runs
	// apart, and within a run they sort as the consumers' names do.
	instance := "three-consumers-" + strconv.FormatInt(time.Now().UnixMilli(), 36)
	partitions, err := partitionCount(ctx, addr, instance)
	if err != nil {
		return err
	}
	d := &demo{out: out, instance: instance, partitions: partitions, changed: make(chan struct{}, 1)}
	names := []string{"consumer-a", "consumer-b", "consumer-c"}
	d.printf("starting %s in group %q on %s (%d partitions)", strings.Join(names, ", "), group, topic, partitions)
	for _, name := range names {
		c, err := d.start(ctx, addr, name)
		if err != nil {
			d.closeAll()
			return err
		}
		d.mu.Lock()
		d.consumers = append(d.consumers, c)
		d.mu.Unlock()
	}
	defer d.closeAll()

	// Settle with three members, then close consumer-a, then consumer-b.
	for i := range names {
		if err := d.waitSettled(ctx); err != nil {
			return err
		}
		if i == len(names)-1 {
			break
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(pause):
		}
		d.closeConsumer(names[i])
	}
	d.closeAll()
	d.printf("done")
	return nil
}

// partitionCount asks the broker how many partitions topic has.
func partitionCount(ctx context.Context, addr, clientID string) (int32, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ClientID(clientID))
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	topics, err := kadm.NewClient(cl).ListTopics(ctx, topic)
	if err != nil {
		return 0, fmt.Errorf("reading topic %q from %s (is the broker running? start it with make run): %w", topic, addr, err)
	}
	if err := topics[topic].Err; err != nil {
		return 0, fmt.Errorf("topic %q on %s: %w", topic, addr, err)
	}
	return int32(len(topics[topic].Partitions)), nil
}

// demo tracks what every consumer's callbacks say it owns.
type demo struct {
	out        io.Writer
	instance   string        // the run's client id prefix
	partitions int32         // of topic
	changed    chan struct{} // cap 1: some consumer's assignment changed

	mu        sync.Mutex // guards out and the fields below
	consumers []*consumer
}

// consumer is one kgo group member.
type consumer struct {
	name   string
	client *kgo.Client
	polled chan struct{} // closed when the poll loop exits

	// guarded by demo.mu
	closed     bool
	owned      []int32 // partitions of the topic, sorted
	generation int32   // of the last assignment
}

// start creates a consumer and its poll loop. The group timings are
// shorter than kgo's defaults so that changes show within a second or two.
func (d *demo) start(ctx context.Context, addr, name string) (*consumer, error) {
	c := &consumer{name: name, polled: make(chan struct{}), generation: -1}
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(addr),
		kgo.ClientID(d.instance+"-"+name), // minibroker's member ids start with it
		kgo.ConsumerGroup(group),
		kgo.ConsumeTopics(topic),
		kgo.SessionTimeout(6*time.Second),
		kgo.HeartbeatInterval(500*time.Millisecond),
		kgo.FetchMaxWait(time.Second),
		// kgo backs off before re-joining after a session error,
		// doubling from 250 ms to 5 s with each consecutive one. Every
		// membership change costs the other members one (see the
		// package comment), so keep the backoff flat and short.
		kgo.RetryBackoffFn(func(int) time.Duration { return 250 * time.Millisecond }),
		kgo.OnPartitionsAssigned(func(_ context.Context, cl *kgo.Client, ps map[string][]int32) {
			d.update(c, cl, "assigned", ps)
		}),
		kgo.OnPartitionsRevoked(func(_ context.Context, cl *kgo.Client, ps map[string][]int32) {
			d.update(c, cl, "revoked", ps)
		}),
		kgo.OnPartitionsLost(func(_ context.Context, cl *kgo.Client, ps map[string][]int32) {
			d.update(c, cl, "lost", ps)
		}),
	)
	if err != nil {
		return nil, err
	}
	c.client = cl
	go d.poll(ctx, c)
	return c, nil
}

// poll is the consumer's poll loop. The demo produces no records, so polls
// return only errors, such as a lost group session.
func (d *demo) poll(ctx context.Context, c *consumer) {
	defer close(c.polled)
	for {
		fetches := c.client.PollFetches(ctx)
		if fetches.IsClientClosed() || ctx.Err() != nil {
			return
		}
		fetches.EachError(func(_ string, _ int32, err error) {
			var se *kgo.ErrGroupSession
			if errors.As(err, &se) {
				d.printf("%-10s  session error: %v", c.name, se.Err)
				return
			}
			d.printf("%-10s  poll error: %v", c.name, err)
		})
	}
}

// update applies one callback to c's partitions and prints it.
func (d *demo) update(c *consumer, cl *kgo.Client, kind string, ps map[string][]int32) {
	_, gen := cl.GroupMetadata()
	parts := slices.Sorted(slices.Values(ps[topic]))
	d.mu.Lock()
	switch kind {
	case "assigned":
		c.owned = slices.Compact(slices.Sorted(slices.Values(append(c.owned, parts...))))
		c.generation = gen
	default:
		c.owned = slices.DeleteFunc(c.owned, func(p int32) bool { return slices.Contains(parts, p) })
	}
	fmt.Fprintf(d.out, "%-10s  %-8s  %-16s  now owns %-16s  (generation %d)\n",
		c.name, kind, d.format(parts), d.format(c.owned), gen)
	d.mu.Unlock()
	select {
	case d.changed <- struct{}{}:
	default:
	}
}

// waitSettled waits until the live consumers hold one generation and
// partitions that are disjoint and cover the topic, then prints who owns
// what.
func (d *demo) waitSettled(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, settleTimeout)
	defer cancel()
	for {
		if line, ok := d.settled(); ok {
			d.printf("%s", line)
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the group did not settle: %w", ctx.Err())
		case <-d.changed:
		}
	}
}

// settled reports whether the group has settled, and the line to print.
func (d *demo) settled() (string, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	owner := map[int32]bool{}
	var live []string
	gen := int32(-1)
	for _, c := range d.consumers {
		if c.closed {
			continue
		}
		if gen == -1 {
			gen = c.generation
		}
		if c.generation < 0 || c.generation != gen {
			return "", false
		}
		for _, p := range c.owned {
			if owner[p] {
				return "", false
			}
			owner[p] = true
		}
		live = append(live, c.name+"="+d.format(c.owned))
	}
	if int32(len(owner)) != d.partitions {
		return "", false
	}
	noun := "members"
	if len(live) == 1 {
		noun = "member"
	}
	return fmt.Sprintf("settled: %d %s: %s", len(live), noun, strings.Join(live, " ")), true
}

// closeConsumer closes one consumer: kgo revokes its partitions and leaves
// the group, and minibroker rebalances the rest at once.
func (d *demo) closeConsumer(name string) {
	d.mu.Lock()
	var c *consumer
	for _, cc := range d.consumers {
		if cc.name == name && !cc.closed {
			c = cc
			c.closed = true
		}
	}
	d.mu.Unlock()
	if c == nil {
		return
	}
	d.printf("closing %s", name)
	c.client.Close()
	<-c.polled
}

// closeAll closes every consumer still open.
func (d *demo) closeAll() {
	d.mu.Lock()
	var names []string
	for _, c := range d.consumers {
		if !c.closed {
			names = append(names, c.name)
		}
	}
	d.mu.Unlock()
	for _, name := range names {
		d.closeConsumer(name)
	}
}

func (d *demo) printf(format string, args ...any) {
	d.mu.Lock()
	defer d.mu.Unlock()
	fmt.Fprintf(d.out, format+"\n", args...)
}

// format renders partitions of the topic as "orders[0 2]", or "-".
func (d *demo) format(parts []int32) string {
	if len(parts) == 0 {
		return "-"
	}
	return fmt.Sprintf("%s%v", topic, parts)
}
