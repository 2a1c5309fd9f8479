package lab

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/minibroker/minibroker/broker"
	"github.com/minibroker/minibroker/internal/interrupt"
)

// ErrUnknownLab is returned by Run for a name that is not a lab.
var ErrUnknownLab = errors.New("unknown lab")

// Names returns the labs, in the order `make lab` runs them.
func Names() []string {
	return []string{"rebalance", "fencing", "expiry", "rebalance-848", "fencing-848", "replay", "zombie", "exactly-once", "partition", "identity"}
}

// recordLab reports whether a lab produces records and reads them back:
// such a lab needs a partition of its own, empty when it starts.
func recordLab(name string) bool {
	return name == "replay" || name == "zombie" || name == "exactly-once"
}

// outputTopic is the exactly-once lab's output topic of two partitions,
// one per run: named like its group.
func outputTopic(group string) string { return group + "-out" }

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
// group, then the topics only its run used, and says which shared topic
// stays. The expiry lab needs the
// in-process broker (ErrNeedsInProcess).
//
// Where the record labs (replay, zombie) end a session, they move the
// manual clock in process; against a running broker (on the real clock)
// the member whose session ends joins with a 2 s session, and the lab
// waits for the broker's own expiry step.
func Run(ctx context.Context, name string, w io.Writer, addr string) error {
	return RunWith(ctx, name, w, Options{Broker: addr})
}

// Options say where a lab runs.
type Options struct {
	// Broker is a running broker's Kafka address; "" starts one in
	// process.
	Broker string
	// Admin is that broker's admin API address (host:port), which the
	// partition lab needs for its fault. The lab checks that it is that
	// broker's (GET /v1/cluster against the broker's Metadata) before it
	// makes anything, and refuses (ErrNeedsAdmin) when it is not.
	Admin string
}

// RunWith is Run with opts. The partition lab against a running broker
// needs opts.Admin, the admin API of that broker (ErrNeedsAdmin), and
// removes its fault when it ends, also when it fails; in process it names
// its topic like its group, with two partitions, as it does against a
// running broker.
func RunWith(ctx context.Context, name string, w io.Writer, opts Options) error {
	addr := opts.Broker
	if !slices.Contains(Names(), name) {
		return fmt.Errorf("%w %q", ErrUnknownLab, name)
	}
	if addr != "" {
		if name == "expiry" {
			return ErrNeedsInProcess
		}
		faults := &remoteFaults{admin: opts.Admin}
		if name == "partition" {
			// Before anything is made there: the fault must go to this
			// broker, through its own admin API.
			if opts.Admin == "" {
				return ErrNeedsAdmin
			}
			if err := faults.check(ctx, addr); err != nil {
				if interrupt.Interrupted(ctx) {
					return interrupt.ErrInterrupted // nothing made yet
				}
				return err
			}
		}
		names := OnBroker("lab")
		topics := names.Topics(map[string]int32{ordersTopic: 4})
		if recordLab(name) {
			topics = names.RunTopics(map[string]int32{recordTopic: 1})
		}
		if name == "partition" {
			topics = partitionTopic(names.Group(name))
		}
		if name == "identity" {
			topics = map[string]int32{IdentityTopic: 4}
		}
		if name == "exactly-once" {
			topics[outputTopic(names.Group(name))] = 2
		}
		err := EnsureTopics(ctx, addr, topics)
		if err != nil && !interrupt.Interrupted(ctx) {
			return err
		}
		// From here on, whatever happens, the run's groups and topics go.
		if err == nil {
			err = runOn(ctx, name, w, nil, addr, names, faults)
		}
		fmt.Fprintln(w)
		if interrupt.Interrupted(ctx) {
			// Whatever the lab was doing failed for that reason alone.
			fmt.Fprintf(w, "lab %s: interrupted; removing what run %s made on the broker.\n", name, names.Run())
			err = interrupt.ErrInterrupted
		}
		return errors.Join(err, cleanupRun(ctx, w, name, addr, names, topicNames(topics), faults, err != nil))
	}
	b, err := StartBroker(ctx)
	if err != nil {
		return err
	}
	names := InProcess("lab")
	if name == "partition" {
		group := names.Group(name)
		if err := b.CreateTopic(group, partitionTopic(group)[group], nil); err != nil {
			return errors.Join(err, b.Close())
		}
	}
	if name == "identity" {
		if err := EnsureTopics(ctx, b.Addr(), map[string]int32{IdentityTopic: 4}); err != nil {
			return errors.Join(err, b.Close())
		}
	}
	if name == "exactly-once" {
		if err := EnsureTopics(ctx, b.Addr(), map[string]int32{outputTopic(names.Group(name)): 2}); err != nil {
			return errors.Join(err, b.Close())
		}
	}
	err = runOn(ctx, name, w, b, b.Addr(), names, &localFaults{b: b})
	return errors.Join(err, b.Close())
}

// runOn runs one lab; b is nil for a broker in another process. names
// name its group and topics; faults puts the partition lab's fault on the
// broker (the partition lab names its topic like its group).
func runOn(ctx context.Context, name string, w io.Writer, b *broker.Broker, addr string, names Scope, faults faultControl) error {
	group, orders := names.Group(name), names.Topic(ordersTopic)
	switch name {
	case "partition":
		return Partition(ctx, w, newClockRun(b), faults, addr, group, group)
	case "replay":
		return Replay(ctx, w, newClockRun(b), addr, group, TP(names.RunTopic(recordTopic), 0))
	case "zombie":
		return Zombie(ctx, w, newClockRun(b), addr, group, TP(names.RunTopic(recordTopic), 0))
	case "exactly-once":
		return ExactlyOnce(ctx, w, newClockRun(b), addr, group, names.RunTopic(recordTopic), outputTopic(group))
	case "rebalance":
		return Rebalance(ctx, w, addr, group, orders)
	case "fencing":
		return Fencing(ctx, w, addr, group, orders)
	case "rebalance-848":
		return Rebalance848(ctx, w, addr, group, orders)
	case "fencing-848":
		return Fencing848(ctx, w, addr, group, orders)
	case "identity":
		return Identity(ctx, w, addr, group)
	default:
		return Expiry(ctx, w, b, group)
	}
}

// cleanupRun removes what a run on a shared broker made: the partition
// lab's fault if the run left it, then the run's groups and topics
// (Scope.Cleanup), within cleanupTimeout of a context that outlives the
// run's. A run that ended well must have left no member in its groups
// and no transaction open.
func cleanupRun(ctx context.Context, w io.Writer, name, addr string, names Scope, topics []string, faults *remoteFaults, failed bool) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	ferr := faults.cleanup(ctx) // a no-op unless the lab left its fault in force
	faults.report(w)
	cleaned, err := names.Cleanup(ctx, w, addr, topics)
	switch {
	case err != nil:
	case len(cleaned.Kept) > 0:
		err = fmt.Errorf("lab %s: could not delete groups %s", name, strings.Join(cleaned.Kept, ", "))
	case len(cleaned.Left) > 0 && !failed:
		err = fmt.Errorf("lab %s: the run left members in its groups: %s", name, strings.Join(cleaned.Left, ", "))
	case len(cleaned.Aborted) > 0 && !failed:
		err = fmt.Errorf("lab %s: the run left transactions open: %s", name, strings.Join(cleaned.Aborted, ", "))
	}
	return errors.Join(ferr, err)
}
