// Command exactly-once is a kgo read-process-write application in a
// consumer group, with every output record and its offset commit in one
// transaction (kgo's GroupTransactSession, KIP-447): it copies each record
// of --from to --to, upper-casing the value. A transaction commits only if
// the member still owns its partitions: the broker fences its
// TxnOffsetCommit by the group's generation, as the chapter fences an
// OffsetCommit, and the transaction aborts. A read_committed reader of
// --to then sees every input exactly once, where process-and-commit's
// output would hold the replays.
//
// With the broker running (make run) and records in orders (see
// ../process-and-commit/produce):
//
//	go run ./examples/exactly-once
//
// It prints "committed N records" or "aborted N records" per transaction
// on stdout. Flags: --broker (default 127.0.0.1:9092), --group (default
// exactly-once), --from (default orders), --to (default orders-upper),
// --id (the transactional id, default exactly-once-<pid>), --count N
// (stop after committing N records; default 0: run until Ctrl-C).
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// config is one run's settings.
type config struct {
	brokers  []string
	group    string
	from, to string
	id       string
	count    int // committed records to stop after; 0 never stops
	opts     []kgo.Opt
}

func main() {
	brokers := flag.String("broker", "127.0.0.1:9092", "minibroker address, HOST:PORT (a comma-separated list for several seeds)")
	group := flag.String("group", "exactly-once", "consumer group")
	from := flag.String("from", "orders", "topic to read")
	to := flag.String("to", "orders-upper", "topic to write (created on first use)")
	id := flag.String("id", fmt.Sprintf("exactly-once-%d", os.Getpid()), "transactional id")
	count := flag.Int("count", 0, "stop after committing this many records (0: run until interrupted)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cfg := config{brokers: strings.Split(*brokers, ","), group: *group, from: *from, to: *to, id: *id, count: *count}
	if err := run(ctx, cfg, os.Stdout); err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintln(os.Stderr, "exactly-once:", err)
		os.Exit(1)
	}
}

// run copies records in transactions until ctx is done or count records
// are committed.
func run(ctx context.Context, cfg config, out io.Writer) error {
	sess, err := kgo.NewGroupTransactSession(append([]kgo.Opt{
		kgo.SeedBrokers(cfg.brokers...), kgo.TransactionalID(cfg.id),
		kgo.ConsumerGroup(cfg.group), kgo.ConsumeTopics(cfg.from),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.AllowAutoTopicCreation(),
		kgo.TransactionTimeout(30 * time.Second),
	}, cfg.opts...)...)
	if err != nil {
		return err
	}
	defer sess.Close()
	done := 0
	for cfg.count == 0 || done < cfg.count {
		fs := sess.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return err
		}
		if fs.NumRecords() == 0 {
			continue
		}
		if err := sess.Begin(); err != nil {
			return err
		}
		fs.EachRecord(func(r *kgo.Record) {
			sess.Produce(ctx, &kgo.Record{Topic: cfg.to, Key: r.Key, Value: bytes.ToUpper(r.Value)}, nil)
		})
		committed, err := sess.End(ctx, kgo.TryCommit)
		if err != nil {
			return err
		}
		if committed {
			done += fs.NumRecords()
			fmt.Fprintf(out, "committed %d records\n", fs.NumRecords())
		} else {
			fmt.Fprintf(out, "aborted %d records: the group moved on; they will be read again by their owner\n", fs.NumRecords())
		}
	}
	return nil
}
