// Command process-and-commit is a kgo consumer-group application that
// commits only what it has processed. It prints each record it processes
// as "partition offset value" on stdout, and commits after every batch; what
// happens to the group (assignments, commits) goes to stderr.
//
// It keeps the chapter's four states apart. Its position (the next offset
// kgo fetches) lives in its memory; the group's committed offset lives in
// the broker, and moves only when the application commits. So:
//
//   - After each polled batch is processed, it commits that batch
//     (CommitRecords); rebalances wait until it has (BlockRebalanceOnPoll).
//   - When its partitions are revoked (it is leaving, or a rebalance
//     takes them in order), OnPartitionsRevoked commits what it processed
//     and has not committed yet: a clean shutdown (Ctrl-C) replays nothing.
//   - When its partitions are lost (the broker fenced it: minibroker does
//     at the member's first heartbeat after any rebalance), OnPartitionsLost
//     commits nothing: another member may own them already, and the fence
//     would refuse the commit anyway.
//   - A crash commits nothing either. Whatever it processed after its last
//     commit, the next owner processes again, from the committed offset:
//     at least once. --crash-after N shows it: the process exits at once,
//     as kill -9 would, after processing its N-th record.
//
// With the broker running (make run) and records in a topic (see
// ./produce), in two terminals:
//
//	go run ./examples/process-and-commit
//
// Flags: --broker (default 127.0.0.1:9092), --group (default
// process-and-commit), --topic (default orders), --session-timeout
// (default 10s: how soon the broker's expiry step removes a crashed
// instance), --crash-after N (default 0: never), --retry-timeout and
// --request-timeout (kgo's RetryTimeout and RequestTimeoutOverhead; the
// README's fault walk-through sets them so that an instance whose
// heartbeats go unanswered keeps retrying them, a zombie, instead of
// giving up after a session and joining again).
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

	"github.com/twmb/franz-go/pkg/kgo"
)

// commitTimeout bounds one commit, including the last ones at shutdown,
// which must not depend on a context already canceled.
const commitTimeout = 10 * time.Second

// errCrashed is what run returns after --crash-after when crash returns
// (tests); a real run has exited by then.
var errCrashed = errors.New("crashed on purpose, without committing")

// config is one run's settings.
type config struct {
	brokers    []string
	group      string
	topic      string
	session    time.Duration
	crashAfter int // records; 0 never crashes
	// retryTimeout and requestTimeout are kgo's RetryTimeout and
	// RequestTimeoutOverhead; 0 keeps kgo's defaults.
	retryTimeout   time.Duration
	requestTimeout time.Duration
	// crash ends the process as kill -9 would: nothing more is committed
	// and nothing is said to the broker. Default os.Exit(3).
	crash func()
	// opts are appended to the client's options (tests: a client id, a
	// dialer they can cut, a short heartbeat interval).
	opts []kgo.Opt
}

func main() {
	brokers := flag.String("broker", "127.0.0.1:9092", "minibroker address, HOST:PORT (a comma-separated list for several seeds)")
	group := flag.String("group", "process-and-commit", "consumer group")
	topic := flag.String("topic", "orders", "topic to consume")
	session := flag.Duration("session-timeout", 10*time.Second, "session timeout: how long the broker keeps a silent member; a duration with a unit: 10s, 500ms")
	crashAfter := flag.Int("crash-after", 0, "exit at once, without committing, after processing this many records (0: never)")
	retryTimeout := flag.Duration("retry-timeout", 0, "how long kgo retries a failed request, heartbeats included, before it gives up (kgo.RetryTimeout; 0: kgo's default, the session timeout for heartbeats)")
	requestTimeout := flag.Duration("request-timeout", 0, "how long kgo waits for an answer before it gives up on the connection and re-dials (kgo.RequestTimeoutOverhead; 0: kgo's default, 10s)")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cfg := config{
		brokers: strings.Split(*brokers, ","), group: *group, topic: *topic,
		session: *session, crashAfter: *crashAfter, retryTimeout: *retryTimeout, requestTimeout: *requestTimeout,
		crash: func() { os.Exit(3) },
	}
	if err := run(ctx, cfg, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "process-and-commit:", err)
		os.Exit(1)
	}
}

// app is the processing state the poll loop and kgo's callbacks share.
type app struct {
	out, log io.Writer

	mu        sync.Mutex
	processed map[int32]*kgo.Record // guarded by mu: per partition of the one topic, the last record processed and not committed
	crashed   bool                  // guarded by mu: once set, the callbacks do nothing
}

// run consumes until ctx is done, then leaves the group cleanly (committing
// what it processed), or until the crash.
func run(ctx context.Context, cfg config, out, log io.Writer) error {
	a := &app{out: out, log: log, processed: map[int32]*kgo.Record{}}
	opts := []kgo.Opt{
		kgo.SeedBrokers(cfg.brokers...),
		// One client id per instance (its start time in base 36, so a later
		// instance's member ids sort after an earlier one's): member ids
		// start with it, and the live page ties each instance's fetch
		// positions to its member.
		kgo.ClientID("process-and-commit-" + strconv.FormatInt(time.Now().UnixMilli(), 36)),
		kgo.ConsumerGroup(cfg.group),
		kgo.ConsumeTopics(cfg.topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), // a new group starts at the beginning
		kgo.DisableAutoCommit(),
		kgo.BlockRebalanceOnPoll(),
		kgo.OnPartitionsAssigned(a.assigned),
		kgo.OnPartitionsRevoked(a.revoked),
		kgo.OnPartitionsLost(a.lost),
	}
	if cfg.session > 0 {
		opts = append(opts, kgo.SessionTimeout(cfg.session), kgo.HeartbeatInterval(min(3*time.Second, cfg.session/3)))
	}
	if cfg.retryTimeout > 0 {
		opts = append(opts, kgo.RetryTimeout(cfg.retryTimeout))
	}
	if cfg.requestTimeout > 0 {
		opts = append(opts, kgo.RequestTimeoutOverhead(cfg.requestTimeout))
	}
	cl, err := kgo.NewClient(append(opts, cfg.opts...)...)
	if err != nil {
		return err
	}

	count := 0
	for {
		fetches := cl.PollFetches(ctx)
		if fetches.IsClientClosed() || ctx.Err() != nil {
			cl.CloseAllowingRebalance() // leaves; OnPartitionsRevoked commits
			return nil
		}
		fetches.EachError(func(topic string, partition int32, err error) {
			if topic == "" { // kgo reports the group's errors this way
				fmt.Fprintf(log, "group: %v\n", err)
				return
			}
			fmt.Fprintf(log, "fetch %s-%d: %v\n", topic, partition, err)
		})
		var batch []*kgo.Record
		for iter := fetches.RecordIter(); !iter.Done(); {
			r := iter.Next()
			fmt.Fprintf(out, "%d %d %s\n", r.Partition, r.Offset, r.Value) // the processing
			a.done(r)
			batch = append(batch, r)
			if count++; cfg.crashAfter > 0 && count == cfg.crashAfter {
				a.crash(cl, cfg.crash, count)
				return errCrashed
			}
		}
		if len(batch) > 0 {
			a.commit(cl, "batch", batch)
		}
		cl.AllowRebalance()
	}
}

// done notes r as processed and not yet committed.
func (a *app) done(r *kgo.Record) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.processed[r.Partition] = r
}

// commit commits what was processed of the batch's partitions, and
// forgets it once the commit is stored.
func (a *app) commit(cl *kgo.Client, why string, batch []*kgo.Record) {
	a.mu.Lock()
	var recs []*kgo.Record
	for _, p := range partitionsOf(batch) {
		if r := a.processed[p]; r != nil {
			recs = append(recs, r)
		}
	}
	a.mu.Unlock()
	a.commitRecords(cl, why, recs)
}

// commitRecords commits the offset after each record in recs.
func (a *app) commitRecords(cl *kgo.Client, why string, recs []*kgo.Record) {
	if len(recs) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), commitTimeout)
	defer cancel()
	if err := cl.CommitRecords(ctx, recs...); err != nil {
		fmt.Fprintf(a.log, "commit after %s failed, nothing forgotten: %v\n", why, err)
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	var done []string
	for _, r := range recs {
		if a.processed[r.Partition] == r {
			delete(a.processed, r.Partition)
		}
		done = append(done, fmt.Sprintf("%s-%d=%d", r.Topic, r.Partition, r.Offset+1))
	}
	fmt.Fprintf(a.log, "committed after %s: %s\n", why, strings.Join(done, " "))
}

// crash stops at once: nothing more is committed, and, when crash returns
// (tests), the client goes away without a LeaveGroup reaching the broker.
func (a *app) crash(cl *kgo.Client, crash func(), count int) {
	fmt.Fprintf(a.log, "crashing after %d records, without committing\n", count)
	a.mu.Lock()
	a.crashed = true
	a.mu.Unlock()
	crash()
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	_ = cl.LeaveGroupContext(canceled)
	cl.CloseAllowingRebalance()
}

func (a *app) assigned(_ context.Context, _ *kgo.Client, parts map[string][]int32) {
	fmt.Fprintf(a.log, "assigned %s\n", formatParts(parts))
}

// revoked: the partitions are being handed over, so what was processed is
// committed first; the next owner starts after it.
func (a *app) revoked(_ context.Context, cl *kgo.Client, parts map[string][]int32) {
	recs, ok := a.take(parts)
	if !ok {
		return
	}
	fmt.Fprintf(a.log, "revoked %s\n", formatParts(parts))
	a.commitRecords(cl, "revoke", recs)
}

// lost: the partitions were taken away without a handover; committing
// now would be a stale owner's commit, so what was processed is dropped.
func (a *app) lost(_ context.Context, _ *kgo.Client, parts map[string][]int32) {
	recs, ok := a.take(parts)
	if !ok {
		return
	}
	if len(recs) == 0 {
		fmt.Fprintf(a.log, "lost %s; all it processed was committed\n", formatParts(parts))
		return
	}
	fmt.Fprintf(a.log, "lost %s; not committing what it processed of %v: the next owner processes it again\n",
		formatParts(parts), partitionsOf(recs))
}

// take removes and returns what was processed and not committed of parts.
// It reports false after a crash.
func (a *app) take(parts map[string][]int32) ([]*kgo.Record, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.crashed {
		return nil, false
	}
	var recs []*kgo.Record
	for _, ps := range parts {
		for _, p := range ps {
			if r := a.processed[p]; r != nil {
				recs = append(recs, r)
				delete(a.processed, p)
			}
		}
	}
	return recs, true
}

// partitionsOf lists the partitions of recs.
func partitionsOf(recs []*kgo.Record) []int32 {
	var ps []int32
	for _, r := range recs {
		if !slices.Contains(ps, r.Partition) {
			ps = append(ps, r.Partition)
		}
	}
	return ps
}

// formatParts renders partitions: "orders [0 2]".
func formatParts(parts map[string][]int32) string {
	var out []string
	for topic, ps := range parts {
		ps = slices.Clone(ps)
		slices.Sort(ps)
		out = append(out, fmt.Sprintf("%s %v", topic, ps))
	}
	slices.Sort(out)
	return strings.Join(out, ", ")
}
