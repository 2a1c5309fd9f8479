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
// (commit N records, then stop; default 0: run until Ctrl-C),
// --session-timeout (default 10s: how soon the broker's expiry step
// removes a crashed instance, and how long one of its transactions may
// stay open), --crash-after N (default 0: never).
//
// A crashed instance keeps its partitions until its session ends: the
// broker learns of a death only when the lease runs out (the chapter's
// expiry step), so another instance takes them over one session timeout
// later. Its transactions time out with its session (kgo advises a
// transaction timeout no longer than the session), so the transaction it
// left open is aborted about as soon, and read_committed readers of --to
// no longer stop before it. --crash-after N shows it: the process exits
// at once, as kill -9 would, after writing its N-th output record inside
// a transaction it never ends (--crash-after 1 always dies in its first
// transaction; a larger N may commit a poll that brought fewer first).
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
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// config is one run's settings.
type config struct {
	brokers    []string
	group      string
	from, to   string
	id         string
	count      int           // committed records to stop after; 0 never stops
	session    time.Duration // session and transaction timeout; 0: kgo's defaults
	crashAfter int           // output records; 0 never crashes
	// crash ends the process as kill -9 would: the open transaction is
	// neither committed nor aborted, and nothing is said to the broker.
	// Default os.Exit(3).
	crash func()
	opts  []kgo.Opt
}

// errCrashed is what run returns after --crash-after when crash returns
// (tests); a real run has exited by then.
var errCrashed = errors.New("crashed on purpose, inside an open transaction")

func main() {
	brokers := flag.String("broker", "127.0.0.1:9092", "minibroker address, HOST:PORT (a comma-separated list for several seeds)")
	group := flag.String("group", "exactly-once", "consumer group")
	from := flag.String("from", "orders", "topic to read")
	to := flag.String("to", "orders-upper", "topic to write (created on first use)")
	id := flag.String("id", fmt.Sprintf("exactly-once-%d", os.Getpid()), "transactional id")
	count := flag.Int("count", 0, "commit this many records, then stop (0: run until interrupted)")
	session := flag.Duration("session-timeout", 10*time.Second, "session timeout, and the timeout of each transaction: how long the broker keeps a silent member and its open transaction; a duration with a unit: 10s, 3s")
	crashAfter := flag.Int("crash-after", 0, "exit at once, inside an open transaction, after writing this many output records (0: never)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cfg := config{
		brokers: strings.Split(*brokers, ","), group: *group, from: *from, to: *to, id: *id,
		count: *count, session: *session, crashAfter: *crashAfter, crash: func() { os.Exit(3) },
	}
	if err := run(ctx, cfg, os.Stdout); err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintln(os.Stderr, "exactly-once:", err)
		os.Exit(1)
	}
}

// run copies records in transactions until ctx is done, count records
// are committed, or the crash.
func run(ctx context.Context, cfg config, out io.Writer) error {
	opts := []kgo.Opt{
		kgo.SeedBrokers(cfg.brokers...),
		// One client id per instance (its start time in base 36): member
		// ids start with it, and the live page tells instances apart.
		kgo.ClientID("exactly-once-" + strconv.FormatInt(time.Now().UnixMilli(), 36)),
		kgo.TransactionalID(cfg.id),
		kgo.ConsumerGroup(cfg.group), kgo.ConsumeTopics(cfg.from),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.AllowAutoTopicCreation(),
		kgo.TransactionTimeout(30 * time.Second),
	}
	if cfg.session > 0 {
		opts = append(opts, kgo.SessionTimeout(cfg.session), kgo.HeartbeatInterval(min(3*time.Second, cfg.session/3)),
			kgo.TransactionTimeout(cfg.session))
	}
	sess, err := kgo.NewGroupTransactSession(append(opts, cfg.opts...)...)
	if err != nil {
		return err
	}
	defer sess.Close()
	done, written := 0, 0
	for cfg.count == 0 || done < cfg.count {
		// With --count, poll no more than is left: a transaction commits
		// the offsets of every record polled, so a larger poll would
		// commit more than was asked for.
		var fs kgo.Fetches
		if cfg.count > 0 {
			fs = sess.PollRecords(ctx, cfg.count-done)
		} else {
			fs = sess.PollFetches(ctx)
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if fs.NumRecords() == 0 {
			continue
		}
		if err := sess.Begin(); err != nil {
			return err
		}
		for _, r := range fs.Records() {
			sess.Produce(ctx, &kgo.Record{Topic: cfg.to, Key: r.Key, Value: bytes.ToUpper(r.Value)}, nil)
			if written++; cfg.crashAfter > 0 && written == cfg.crashAfter {
				// The writes reach the log, as those of a process killed
				// after they were sent would; the transaction stays open.
				if err := sess.Client().Flush(ctx); err != nil {
					return err
				}
				fmt.Fprintf(out, "crashing after writing %s, inside a transaction it never ends\n", records(written))
				cfg.crash()
				return errCrashed
			}
		}
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
	fmt.Fprintf(out, "copied %d records, as --count %d asked\n", done, cfg.count)
	return nil
}

// records is "1 record" or "n records".
func records(n int) string {
	if n == 1 {
		return "1 record"
	}
	return strconv.Itoa(n) + " records"
}
