// Command minicompare runs the same scripted consumer-group scenarios
// against minibroker and against kfake, franz-go's in-process Kafka fake,
// and prints where they agree and where they differ. It is a program of
// its own so that the minibroker binary does not link kfake.
//
//	minicompare [--broker ADDR]
//	minicompare etl [--records N] [--members N] [--churn N] [--seed N] ...
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/minibroker/minibroker/internal/interrupt"
	"github.com/minibroker/minibroker/tools/compare"
	labs "github.com/minibroker/minibroker/tools/lab"
	"github.com/minibroker/minibroker/wireclient"
)

const usage = `usage: minicompare [--broker ADDR]
       minicompare etl [flags] (minicompare etl -h)

Runs the same scripted consumer-group scenarios, over the classic group
protocol and over Kafka 4's consumer protocol (KIP-848, the kip848-*
scenarios), against minibroker and against kfake (franz-go's in-process
Kafka fake) over real sockets, and prints each side's answer, whether they
agree, and the row of docs/behavior-matrix.md that explains them; answers
too long for the table follow it. Answers that differ from the documented
ones are marked "!" and make the command exit 1.

By default both brokers run in this process. --broker ADDR runs the
minibroker side against a running minibroker instead (it needs the real
clock for the scenarios that wait for a session to expire). It touches
nothing of yours there: each run creates topics of its own
(compare-<run>-orders with 4 partitions, compare-<run>-payments with one,
and one of one partition for each scenario that produces records, named
like its group), plays in groups named compare-SCENARIO-<run>, and deletes
those groups at the end, with their offsets, then those topics
(DeleteTopics); the last lines say so.

Ctrl-C stops the run within a second or two: it prints no table, says
"interrupted", exits 130 (128 + SIGINT), and with --broker first removes
what the run made (members it left in its groups leave, its open
transactions are aborted, its groups and topics are deleted), saying
what it removed and what it could not.
`

// cleanupTimeout bounds deleting the run's groups on a shared broker,
// which happens even when the comparison ran out of time.
const cleanupTimeout = 5 * time.Second

// compareTimeout bounds the whole comparison; it takes a few seconds
// (the etl-churn scenario the longest).
const compareTimeout = 60 * time.Second

func main() {
	// The first SIGINT or SIGTERM cancels ctx: the run stops, says it was
	// interrupted and cleans up; a second one forces exit.
	ctx, stop := interrupt.Context(context.Background())
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run executes one command line and returns the exit status: 0 when every
// answer is the documented one, 1 otherwise, 2 for a usage error.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "etl" {
		return runETL(ctx, args[1:], stdout, stderr)
	}
	fs := flag.NewFlagSet("minicompare", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, usage) }
	broker := fs.String("broker", "", "`ADDR` of a running minibroker (default: an in-process one)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "minicompare: unexpected argument %q\n%s", fs.Arg(0), usage)
		return 2
	}
	ctx, cancel := context.WithTimeout(ctx, compareTimeout)
	defer cancel()

	addrs := map[compare.Side]string{compare.Minibroker: *broker}
	names := map[compare.Side]labs.Scope{}
	if *broker == "" {
		b, err := compare.StartMinibroker(ctx)
		if err != nil {
			fmt.Fprintf(stderr, "minicompare: %v\n", err)
			return 1
		}
		defer b.Close()
		addrs[compare.Minibroker] = b.Addr()
	} else {
		// Fail early, and before kfake starts, when the broker is not there.
		conn, err := wireclient.Dial(ctx, *broker, "compare")
		if err != nil {
			fmt.Fprintf(stderr, "minicompare: %v\n", err)
			return 1
		}
		conn.Close()
		names[compare.Minibroker] = labs.OnBroker("compare")
	}
	kfakeAddr, stop, err := compare.StartKfake()
	if err != nil {
		fmt.Fprintf(stderr, "minicompare: %v\n", err)
		return 1
	}
	defer stop()
	addrs[compare.Kfake] = kfakeAddr

	results := compare.Run(ctx, addrs, names)
	interrupted := interrupt.Interrupted(ctx)
	var unexpected int
	var werr error
	if interrupted {
		// An interrupted scenario's answer says nothing of either broker:
		// no table.
		fmt.Fprintf(stdout, "minicompare: interrupted after %d of %d scenarios; no table.\n", finished(results), len(results))
	} else {
		unexpected, werr = compare.WriteTable(stdout, results)
	}
	code := 0
	if werr != nil || unexpected > 0 {
		code = 1
	}
	if scope, ok := names[compare.Minibroker]; ok {
		fmt.Fprintln(stdout)
		if interrupted {
			fmt.Fprintf(stdout, "compare: removing what run %s made on the broker.\n", scope.Run())
		}
		topics := slices.Sorted(maps.Keys(compare.RunTopics(scope)))
		cleanCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
		defer cancel()
		cleaned, cerr := scope.Cleanup(cleanCtx, stdout, *broker, topics)
		switch {
		case cerr != nil:
			fmt.Fprintf(stderr, "minicompare: cleaning up run %s: %v\n", scope.Run(), cerr)
			code = 1
		case len(cleaned.Kept) > 0:
			code = 1
		case len(cleaned.Left) > 0 && !interrupted:
			fmt.Fprintf(stderr, "minicompare: the run left members in its groups: %s\n", strings.Join(cleaned.Left, ", "))
			code = 1
		case len(cleaned.Aborted) > 0 && !interrupted:
			fmt.Fprintf(stderr, "minicompare: the run left transactions open: %s\n", strings.Join(cleaned.Aborted, ", "))
			code = 1
		}
	}
	if interrupted {
		fmt.Fprintln(stderr, "minicompare: interrupted")
		return interrupt.ExitCode(ctx)
	}
	return code
}

// finished counts the scenarios both brokers answered (a failed run's
// answer starts with "error: ").
func finished(results []compare.Result) int {
	n := 0
	for _, r := range results {
		if !strings.HasPrefix(r.Answer[compare.Minibroker], "error: ") && !strings.HasPrefix(r.Answer[compare.Kfake], "error: ") {
			n++
		}
	}
	return n
}
