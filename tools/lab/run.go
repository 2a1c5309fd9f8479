package lab

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/minibroker/minibroker/broker"
)

// ErrUnknownLab is returned by Run for a name that is not a lab.
var ErrUnknownLab = errors.New("unknown lab")

// Names returns the labs, in the order `make lab` runs them.
func Names() []string {
	return []string{"rebalance", "fencing", "expiry", "rebalance-848", "fencing-848", "replay", "zombie"}
}

// recordLab reports whether a lab produces records and reads them back:
// such a lab needs a partition of its own, empty when it starts.
func recordLab(name string) bool { return name == "replay" || name == "zombie" }

// recordTopic is the one-partition topic of the record labs (payments on
// the in-process broker, which starts empty on every run).
const recordTopic = "payments"

// ordersTopic is the chapter's topic of four partitions, which the group
// labs share out.
const ordersTopic = "orders"

// cleanupTimeout bounds the clean-up after a run on a shared broker, which
// runs even when the run's own context has ended.
const cleanupTimeout = 5 * time.Second

// Group returns the group id a lab uses against a fresh in-process broker.
func Group(name string) string { return InProcess("lab").Group(name) }

// Run runs the named lab and writes its output to w.
//
// With addr "" it starts an in-process broker on a manual clock with a
// temporary data directory, runs the lab against it and stops it: the
// output is then the same bytes on every run. With an address it runs
// against that broker under names of its own (OnBroker: group
// "lab-NAME-<run>", topic "lab-orders" of 4 partitions, or
// "lab-<run>-payments" of one for the record labs, created first), so it
// touches nothing a user made and earlier runs cannot interfere; member
// ids then depend on the broker's history. At the end it deletes its
// group and says that its topic stays. The expiry lab needs the
// in-process broker (ErrNeedsInProcess).
//
// Where the record labs (replay, zombie) end a session, they move the
// manual clock in process; against a running broker (on the real clock)
// the member whose session ends joins with a 2 s session, and the lab
// waits for the broker's own expiry step.
func Run(ctx context.Context, name string, w io.Writer, addr string) error {
	if !slices.Contains(Names(), name) {
		return fmt.Errorf("%w %q", ErrUnknownLab, name)
	}
	if addr != "" {
		if name == "expiry" {
			return ErrNeedsInProcess
		}
		names := OnBroker("lab")
		topics := names.Topics(map[string]int32{ordersTopic: 4})
		if recordLab(name) {
			topics = names.RunTopics(map[string]int32{recordTopic: 1})
		}
		if err := EnsureTopics(ctx, addr, topics); err != nil {
			return err
		}
		err := runOn(ctx, name, w, nil, addr, names)
		fmt.Fprintln(w)
		cleanCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
		defer cancel()
		kept, cerr := names.Cleanup(cleanCtx, w, addr, topicNames(topics))
		if cerr == nil && len(kept) > 0 {
			cerr = fmt.Errorf("lab %s: groups still have members at the end: %v", name, kept)
		}
		return errors.Join(err, cerr)
	}
	b, err := StartBroker(ctx)
	if err != nil {
		return err
	}
	err = runOn(ctx, name, w, b, b.Addr(), InProcess("lab"))
	return errors.Join(err, b.Close())
}

// runOn runs one lab; b is nil for a broker in another process. names
// name its group and topics.
func runOn(ctx context.Context, name string, w io.Writer, b *broker.Broker, addr string, names Scope) error {
	group, orders := names.Group(name), names.Topic(ordersTopic)
	switch name {
	case "replay":
		return Replay(ctx, w, newClockRun(b), addr, group, TP(names.RunTopic(recordTopic), 0))
	case "zombie":
		return Zombie(ctx, w, newClockRun(b), addr, group, TP(names.RunTopic(recordTopic), 0))
	case "rebalance":
		return Rebalance(ctx, w, addr, group, orders)
	case "fencing":
		return Fencing(ctx, w, addr, group, orders)
	case "rebalance-848":
		return Rebalance848(ctx, w, addr, group, orders)
	case "fencing-848":
		return Fencing848(ctx, w, addr, group, orders)
	default:
		return Expiry(ctx, w, b, group)
	}
}
