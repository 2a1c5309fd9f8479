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
	"github.com/minibroker/minibroker/tools/compare"
)

const etlUsage = `usage: minicompare etl [--records N] [--members N] [--churn N] [--seed N]
                      [--stages N] [--partitions N] [--heartbeat D] [--only NAME]

Runs an ETL of stock kgo consumer groups against an in-process minibroker
and kfake side by side: each stage reads one topic and writes every record
it reads to the next, while members join and leave on a schedule drawn
from the seed. It runs once per protocol (classic eager range and
round-robin, classic cooperative-sticky, the consumer protocol's uniform
and range), plainly and with kgo's GroupTransactSession and
read_committed readers, and prints per row the records in and out,
those processed more than once (and how many times), those missing, the
rebalances, the errors the application was handed, and the time.
Progress goes to stderr. It exits 1 when a run fails or loses a record.
Ctrl-C stops it within a second or two: the runs it cut short read
"interrupted" in the table, the summary counts only those that finished,
and it exits 130 (128 + SIGINT).
`

// etlRowTimeout bounds one row on one side; the whole run is bounded by
// the rows' count times it.
const etlRowTimeout = 60 * time.Second

// runETL executes minicompare etl.
func runETL(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	d := compare.DefaultETLConfig()
	fs := flag.NewFlagSet("minicompare etl", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, etlUsage) }
	records := fs.Int("records", d.Records, "source records")
	members := fs.Int("members", d.Members, "members per stage at the start")
	churn := fs.Int("churn", d.Churn, "joins and leaves per stage")
	seed := fs.Uint64("seed", d.Seed, "seed of the churn schedule")
	stages := fs.Int("stages", d.Stages, "stages (consumer groups) in the pipeline")
	partitions := fs.Int("partitions", int(d.Partitions), "partitions per topic")
	heartbeat := fs.Duration("heartbeat", d.Heartbeat, "members' heartbeat interval")
	only := fs.String("only", "", "run only the rows whose protocol contains `NAME` (\"eager\", \"consumer range\")")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "minicompare etl: unexpected argument %q\n%s", fs.Arg(0), etlUsage)
		return 2
	}
	if *records < 1 || *members < 1 || *churn < 0 || *stages < 1 || *partitions < 1 || *heartbeat <= 0 {
		fmt.Fprintf(stderr, "minicompare etl: --records, --members, --stages, --partitions and --heartbeat must be positive, --churn not negative\n")
		return 2
	}
	cfg := compare.ETLConfig{Records: *records, Members: *members, Churn: *churn, Seed: *seed, Stages: *stages,
		Partitions: int32(*partitions), Heartbeat: *heartbeat, Timeout: etlRowTimeout}
	for _, row := range compare.ETLRows() {
		if strings.Contains(row.Protocol.Name, *only) {
			cfg.Rows = append(cfg.Rows, row)
		}
	}
	if len(cfg.Rows) == 0 {
		fmt.Fprintf(stderr, "minicompare etl: no protocol matches %q\n", *only)
		return 2
	}
	ctx, cancel := context.WithTimeout(ctx, time.Duration(len(cfg.Rows))*etlRowTimeout)
	defer cancel()
	addrs, stop, err := compare.StartETLBrokers(ctx, cfg.Heartbeat)
	if err != nil {
		fmt.Fprintf(stderr, "minicompare etl: %v\n", err)
		return 1
	}
	defer stop()
	results := compare.RunETL(ctx, cfg, addrs, stderr)
	if err := compare.WriteETLTable(stdout, cfg, results); err != nil {
		fmt.Fprintf(stderr, "minicompare etl: %v\n", err)
		return 1
	}
	if interrupt.Interrupted(ctx) {
		// The table marks the runs cut short; the brokers were this
		// process's, and go with it.
		fmt.Fprintln(stderr, "minicompare etl: interrupted")
		return interrupt.ExitCode(ctx)
	}
	for _, r := range results {
		if r.Err != nil || r.Missing > 0 {
			return 1
		}
	}
	return 0
}
