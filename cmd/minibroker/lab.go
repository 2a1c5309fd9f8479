package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/minibroker/minibroker/internal/interrupt"
	labs "github.com/minibroker/minibroker/tools/lab"
)

const labUsage = `usage: minibroker lab rebalance|fencing|expiry|rebalance-848|fencing-848|replay|zombie|exactly-once|partition|identity [--broker ADDR [--admin ADDR]]

Runs one of the chapter's experiments over a real TCP socket and prints each
step with the Kafka requests sent and the answers received. rebalance,
fencing and expiry speak the classic group protocol (JoinGroup, SyncGroup,
Heartbeat); rebalance-848 and fencing-848 are the same experiments over
Kafka 4's consumer protocol (KIP-848: ConsumerGroupHeartbeat), where a
member learns of a rebalance from its next heartbeat's answer. replay and
zombie put ten records in a partition and read them back: replay is
exercise 1 (a crash between processing and commit, and the successor that
processes the same records again), zombie counts what the generation fence
saves when a paused owner wakes up and commits, and exactly-once runs the
zombie with output, plainly and in transactions (KIP-447), and counts the
duplicates a read_committed reader finds downstream. partition cuts a stock kgo
consumer off from its group with a fault that drops its heartbeats: it
goes on fetching and processing while its lease runs out, the other
member takes its partition, and its commit is fenced. identity asks the chapter's
two questions of a static member (a group instance id): its restart keeps
its partitions at the same generation, the zombie of its previous run is
fenced by FENCED_INSTANCE_ID, and a dynamic member's restart costs a
rebalance.

By default the lab starts its own broker in this process (ephemeral port,
temporary data dir, manual clock), so the output is the same on every run.
--broker ADDR runs any lab but expiry against a running minibroker instead;
member ids then depend on that broker. The lab touches nothing of yours
there: it creates a topic of its own (lab-orders; lab-<run>-payments for
replay, zombie and exactly-once, which also makes its output topic;
lab-identity-orders for identity, in process too) and uses groups named
lab-NAME-<run>, which it deletes at the end, with their offsets, and
then the topics only that run used; the shared ones stay (DeleteTopics or
the live page's delete button removes them).
The expiry lab moves the broker's manual clock and runs its expiry step
from inside the process, so it has no --broker form. With
--broker, replay and zombie give the member whose session must end a 2 s
session and wait for the broker's expiry step on its real clock (a broker
started with --clock manual never runs it, and the lab gives up after 12 s).
With --broker, partition puts its fault on the broker through the admin API
at --admin ADDR (default 127.0.0.1:9644, as make run serves it); it first
checks that this API is the broker's (GET /v1/cluster names the address
the broker's Metadata advertises) and on a real clock, and refuses
otherwise, before it makes anything there. The fault is removed when the
lab ends, also when it fails or is interrupted.

Ctrl-C stops a lab within a second or two: it says "interrupted", exits
130 (128 + SIGINT), and with --broker first removes what its run made:
the members it left in its groups leave, its open transactions are
aborted, its fault is removed, its groups and its own topics are
deleted; the last lines say what was removed and what could not be.
`

// labTimeout bounds one lab run; an in-process lab takes milliseconds, and
// zombie against a running broker about 5 s.
const labTimeout = 30 * time.Second

// lab runs one of the chapter's labs: "minibroker lab NAME [--broker ADDR]".
func lab(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("minibroker lab", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, labUsage) }
	broker := fs.String("broker", "", "`ADDR` of a running minibroker (default: an in-process broker)")
	admin := fs.String("admin", "127.0.0.1:9644", "`ADDR` of that broker's admin API, for the partition lab's fault")
	var name string
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		name, args = args[0], args[1:]
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if name == "" && fs.NArg() > 0 {
		name = fs.Arg(0)
		fs.Parse(fs.Args()[1:])
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "minibroker lab: unexpected argument %q\n%s", fs.Arg(0), labUsage)
		return 2
	}
	if name == "" {
		fmt.Fprint(stderr, labUsage)
		return 2
	}

	runCtx, cancel := context.WithTimeout(ctx, labTimeout)
	defer cancel()
	err := labs.RunWith(runCtx, name, stdout, labs.Options{Broker: *broker, Admin: *admin})
	switch {
	case err == nil:
		return 0
	case interrupt.Interrupted(ctx):
		// The run's report (stdout) says what it removed; err adds what
		// the clean-up could not do, if anything.
		if !errors.Is(err, interrupt.ErrInterrupted) {
			err = fmt.Errorf("%w (%v)", interrupt.ErrInterrupted, err)
		}
		fmt.Fprintf(stderr, "minibroker lab %s: %v\n", name, err)
		return interrupt.ExitCode(ctx)
	case errors.Is(err, labs.ErrUnknownLab):
		fmt.Fprintf(stderr, "minibroker lab: %v\n%s", err, labUsage)
		return 2
	case errors.Is(err, labs.ErrNeedsInProcess):
		fmt.Fprintf(stderr, "minibroker lab %s: %v; run it without --broker\n", name, err)
		return 2
	case errors.Is(err, labs.ErrNeedsAdmin):
		hint := ""
		if !flagSet(fs, "admin") {
			hint = fmt.Sprintf(" (--admin defaults to %s, where make run serves it)", *admin)
		}
		fmt.Fprintf(stderr, "minibroker lab %s: %v%s\n", name, err, hint)
		return 2
	default:
		fmt.Fprintf(stderr, "minibroker lab %s: %v\n", name, err)
		return 1
	}
}

// flagSet reports whether the command line set the flag name.
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}
