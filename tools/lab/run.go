package lab

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"time"

	"github.com/minibroker/minibroker/broker"
)

// ErrUnknownLab is returned by Run for a name that is not a lab.
var ErrUnknownLab = errors.New("unknown lab")

// Names returns the labs, in the order `make lab` runs them.
func Names() []string {
	return []string{"rebalance", "fencing", "expiry", "rebalance-848", "fencing-848", "replay", "zombie", "exactly-once"}
}

// recordLab reports whether a lab produces records and reads them back:
// such a lab needs a partition of its own, empty when it starts.
func recordLab(name string) bool {
	return name == "replay" || name == "zombie" || name == "exactly-once"
}

// outputTopic is the exactly-once lab's output topic of two partitions,
// one per run: named like its group.
func outputTopic(group string) string { return group + "-out" }

// recordTopic is the one-partition topic of the record labs on the
// in-process broker, which starts empty on every run.
const recordTopic = "payments"

// Group returns the group id a lab uses against a fresh in-process broker.
func Group(name string) string { return "lab-" + name }

// Run runs the named lab and writes its output to w.
//
// With addr "" it starts an in-process broker on a manual clock with a
// temporary data directory, runs the lab against it and stops it: the
// output is then the same bytes on every run. With an address it runs
// against that broker, in a group whose id ends with a suffix unique to the
// run (so earlier runs cannot interfere), after making sure topic orders
// exists with 4 partitions; member ids then depend on the broker's
// history. The expiry lab needs the in-process broker (ErrNeedsInProcess).
//
// The record labs (replay, zombie) need an empty partition: in process
// that is payments-0; against a running broker each run creates a topic
// of one partition named like its group. Where they end a session, they
// move the manual clock in process; against a running broker (on the real
// clock) the member whose session ends joins with a 2 s session, and the
// lab waits for the broker's own expiry step.
func Run(ctx context.Context, name string, w io.Writer, addr string) error {
	if !slices.Contains(Names(), name) {
		return fmt.Errorf("%w %q", ErrUnknownLab, name)
	}
	if addr != "" {
		if name == "expiry" {
			return ErrNeedsInProcess
		}
		group := Group(name) + "-" + strconv.FormatInt(time.Now().UnixNano(), 36)
		topics, topic := map[string]int32{"orders": 4}, ""
		if recordLab(name) {
			topics, topic = map[string]int32{group: 1}, group
		}
		if name == "exactly-once" {
			topics[outputTopic(group)] = 2
		}
		if err := EnsureTopics(ctx, addr, topics); err != nil {
			return err
		}
		return runOn(ctx, name, w, nil, addr, group, topic)
	}
	b, err := StartBroker(ctx)
	if err != nil {
		return err
	}
	if name == "exactly-once" {
		if err := EnsureTopics(ctx, b.Addr(), map[string]int32{outputTopic(Group(name)): 2}); err != nil {
			return errors.Join(err, b.Close())
		}
	}
	err = runOn(ctx, name, w, b, b.Addr(), Group(name), recordTopic)
	return errors.Join(err, b.Close())
}

// runOn runs one lab; b is nil for a broker in another process. topic is
// the record labs' topic.
func runOn(ctx context.Context, name string, w io.Writer, b *broker.Broker, addr, group, topic string) error {
	switch name {
	case "replay":
		return Replay(ctx, w, newClockRun(b), addr, group, TP(topic, 0))
	case "zombie":
		return Zombie(ctx, w, newClockRun(b), addr, group, TP(topic, 0))
	case "exactly-once":
		return ExactlyOnce(ctx, w, newClockRun(b), addr, group, topic, outputTopic(group))
	case "rebalance":
		return Rebalance(ctx, w, addr, group)
	case "fencing":
		return Fencing(ctx, w, addr, group)
	case "rebalance-848":
		return Rebalance848(ctx, w, addr, group)
	case "fencing-848":
		return Fencing848(ctx, w, addr, group)
	default:
		return Expiry(ctx, w, b, group)
	}
}
