package lab

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/minibroker/minibroker/broker"
	"github.com/minibroker/minibroker/coordinator"
)

// Timings of the partition lab's kgo consumers.
const (
	partitionHeartbeat = 100 * time.Millisecond
	// partitionRequestTimeout is how long kgo waits for an answer before
	// it gives up on the connection and re-dials (its
	// RequestTimeoutOverhead): a dropped answer costs this much.
	partitionRequestTimeout = time.Second
	// partitionRetryTimeout lets kgo retry a heartbeat for longer than
	// the lab runs. By default kgo stops after a session timeout and
	// rejoins, which against a broker on a real clock would race the
	// expiry step.
	partitionRetryTimeout = time.Minute
	// partitionWait bounds each wait for the group or the records.
	partitionWait = 15 * time.Second
)

// Partition cuts a stock kgo consumer off from its group and watches it
// become a zombie. A and B share the two partitions of topic; a fault
// drops every heartbeat of A (the broker reads them and never answers, as
// if the answers were lost on the way). A's lease runs out, the expiry
// step removes it, and B takes both partitions at a new generation. A is
// not told: its fetches are answered, so it goes on processing the
// records of its partition, and so does B. A's commit of them is fenced;
// B's is stored.
func Partition(ctx context.Context, w io.Writer, c clockRun, faults faultControl, addr, group, topic string) (err error) {
	fmt.Fprintf(w, "lab partition: a consumer cut off from its group, in group %s, topic %s\n", group, topic)
	fmt.Fprintf(w, "Two stock kgo consumers, A and B, share %s-0 and %s-1. A fault on the broker drops\n", topic, topic)
	fmt.Fprintf(w, "every heartbeat A sends: no answer ever comes, as if the network lost it. A's lease\n")
	fmt.Fprintf(w, "runs out, but A is not told, and its fetches are still answered.\n")
	if c.b == nil {
		fmt.Fprintf(w, "The broker runs in another process: the fault goes through its admin API, the clock\n")
		fmt.Fprintf(w, "is real, A's session is %v, and the lab waits for the broker's own expiry step.\n", c.shortSession())
	}

	heading(w, "1. A joins, then B; each gets one partition.")
	a, err := startPartitionConsumer(ctx, addr, "a", group, topic, c.shortSession())
	if err != nil {
		return err
	}
	defer a.close()
	if err := a.waitOwns(ctx, TP(topic, 0), TP(topic, 1)); err != nil {
		return err
	}
	b, err := startPartitionConsumer(ctx, addr, "b", group, topic, recordLabSession)
	if err != nil {
		return err
	}
	defer b.close()
	if err := b.waitOwns(ctx, TP(topic, 1)); err != nil {
		return err
	}
	if err := a.waitOwns(ctx, TP(topic, 0)); err != nil {
		return err
	}
	aID, gen := a.cl.GroupMetadata()
	bID, _ := b.cl.GroupMetadata()
	fmt.Fprintf(w, "  generation %d: A is %s and owns %s; B is %s and owns %s\n", gen, aID, TP(topic, 0), bID, TP(topic, 1))

	heading(w, "2. Three records go to each partition; each owner processes its own and commits.")
	if err := producePartitionRecords(ctx, addr, topic, 0, "r0", "r1", "r2"); err != nil {
		return err
	}
	if err := producePartitionRecords(ctx, addr, topic, 1, "s0", "s1", "s2"); err != nil {
		return err
	}
	if err := a.waitProcessed(ctx, 0, 3); err != nil {
		return err
	}
	if err := b.waitProcessed(ctx, 1, 3); err != nil {
		return err
	}
	for p, m := range []*partitionConsumer{a, b} { // A owns partition 0, B partition 1
		code, err := m.commit(ctx, topic, int32(p), 3)
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "  %s commits %s=3: %s\n", m.name, TP(topic, int32(p)), CodeName(code))
	}

	heading(w, "3. The fault: every heartbeat of A is dropped, until removed.")
	fmt.Fprintf(w, "  fault: keys=[12] (Heartbeat) group=%s member=%s drop count=-1 (until removed)\n", group, aID)
	if err := faults.cut(ctx, group, aID); err != nil {
		return err
	}
	// Whatever happens next, the fault goes before A and B close (A's
	// LeaveGroup would wait behind a dropped heartbeat otherwise).
	defer func() {
		cleanCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
		defer cancel()
		err = errors.Join(err, faults.cleanup(cleanCtx))
	}()
	if err := faults.waitHit(ctx); err != nil {
		return err
	}
	fmt.Fprintf(w, "  A's next heartbeat reaches the broker and is dropped: kgo waits for its answer.\n")

	heading(w, "4. A's lease runs out; the expiry step removes it; B takes both partitions.")
	if err := partitionExpire(ctx, w, c, addr, group, aID, bID); err != nil {
		return err
	}
	if err := b.waitOwns(ctx, TP(topic, 0), TP(topic, 1)); err != nil {
		return err
	}
	_, newGen := b.cl.GroupMetadata()
	fmt.Fprintf(w, "  generation %d: B owns %s, %s (it rejoined when its heartbeat was refused)\n", newGen, TP(topic, 0), TP(topic, 1))
	fmt.Fprintf(w, "  A still believes it owns %s at generation %d.\n", Partitions(a.owned()), gen)

	heading(w, fmt.Sprintf("5. Three more records go to %s. Both process them.", TP(topic, 0)))
	if err := producePartitionRecords(ctx, addr, topic, 0, "r3", "r4", "r5"); err != nil {
		return err
	}
	if err := a.waitProcessed(ctx, 0, 6); err != nil {
		return err
	}
	if err := b.waitProcessed(ctx, 0, 6); err != nil {
		return err
	}
	fmt.Fprintf(w, "  offset  value  processed by\n")
	for off := range int64(6) {
		var by []string
		var value string
		for _, m := range []*partitionConsumer{a, b} {
			if v, ok := m.processedAt(0, off); ok {
				by, value = append(by, m.name), v
			}
		}
		fmt.Fprintf(w, "  %-7d %-6s %s\n", off, value, strings.Join(by, ", "))
	}
	fmt.Fprintf(w, "  B started %s at the committed offset, 3: r3 to r5 were processed twice.\n", TP(topic, 0))

	heading(w, fmt.Sprintf("6. B, the owner now, commits %s=6. A commits %s=6 too, as the member it was.", TP(topic, 0), TP(topic, 0)))
	code, err := b.commit(ctx, topic, 0, 6)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "  B commits %s=6 (member %s, generation %d): %s\n", TP(topic, 0), bID, newGen, CodeName(code))
	// A's commit goes out on the connection its lost heartbeat stalls.
	// Once it is written the fault is removed, so that kgo's retries get
	// through when it re-dials; the commit still carries A's member id
	// and old generation.
	select {
	case <-a.committing: // step 2's commit
	default:
	}
	done := make(chan commitResult, 1)
	go func() {
		code, err := a.commit(ctx, topic, 0, 6)
		done <- commitResult{code, err}
	}()
	select {
	case <-a.committing:
	case <-ctx.Done():
		return ctx.Err()
	}
	if err := faults.remove(ctx); err != nil {
		return err
	}
	res := <-done
	if res.err != nil {
		return res.err
	}
	fmt.Fprintf(w, "  A commits %s=6 (member %s, generation %d): %s: the fence refuses it\n", TP(topic, 0), aID, gen, CodeName(res.code))
	fmt.Fprintf(w, "  (kgo sends commits on the connection its heartbeats use, where a lost answer holds\n")
	fmt.Fprintf(w, "  back everything behind it until kgo gives up on the connection and re-dials; the\n")
	fmt.Fprintf(w, "  fault was removed once the commit was written, so that a retry gets through)\n")
	if res.code == 0 || code != 0 {
		return fmt.Errorf("lab partition: A's commit got %s and B's %s, want a refusal and NONE", CodeName(res.code), CodeName(code))
	}
	fmt.Fprintf(w, "\nThe fault made the zombie; the generation fence kept its commit out.\n")
	return nil
}

// commitResult is one commit's partition code, or why it failed.
type commitResult struct {
	code int16
	err  error
}

// partitionExpire ends A's session and not B's. In process, the clock
// moves to 1 ms before A's deadline, B's next heartbeat renews its lease
// at that reading (A's are lost), and then the clock moves past A's
// deadline and the expiry step runs.
func partitionExpire(ctx context.Context, w io.Writer, c clockRun, addr, group, aID, bID string) error {
	if c.b == nil {
		watcher, err := Dial(ctx, addr, MemberConfig{Group: group})
		if err != nil {
			return err
		}
		defer watcher.Close()
		return awaitExpiry(ctx, w, watcher, aID)
	}
	lease := func(id string) time.Time {
		view, _ := c.b.Coordinator().Describe(group)
		i := slices.IndexFunc(view.Members, func(mv coordinator.MemberView) bool { return mv.MemberID == id })
		if i < 0 {
			return time.Time{}
		}
		return view.Members[i].Deadline
	}
	deadline := lease(aID)
	if _, err := c.b.Advance(deadline.Add(-time.Millisecond).Sub(c.b.Now())); err != nil {
		return err
	}
	if err := poll(ctx, func() bool { return lease(bID).After(deadline) }); err != nil {
		return fmt.Errorf("lab partition: B did not renew its lease: %w", err)
	}
	fmt.Fprintf(w, "  clock: %d ms, 1 ms before A's deadline; B's heartbeat renews its lease, A's is lost\n", c.millis(c.b.Now()))
	return c.endSession(ctx, w, nil, group, aID)
}

// poll waits until cond holds, checking every few milliseconds, within
// partitionWait.
func poll(ctx context.Context, cond func() bool) error {
	ctx, cancel := context.WithTimeout(ctx, partitionWait)
	defer cancel()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
	return nil
}

// faultControl puts the lab's one fault in force and takes it away: on
// the in-process broker directly, on another one through its admin API.
// cleanup removes it if the run has not (it failed, or was interrupted).
type faultControl interface {
	cut(ctx context.Context, group, member string) error
	waitHit(ctx context.Context) error
	remove(ctx context.Context) error
	cleanup(ctx context.Context) error
}

// localFaults is the in-process broker's fault API.
type localFaults struct {
	b *broker.Broker
	f *broker.InjectedFault
}

func (l *localFaults) cut(_ context.Context, group, member string) error {
	f, err := l.b.InjectFault(broker.Fault{Keys: []int16{12}, Group: group, Member: member, Drop: true, Count: -1})
	l.f = f
	return err
}

func (l *localFaults) waitHit(ctx context.Context) error {
	return poll(ctx, func() bool { return l.f.Hits() > 0 })
}

func (l *localFaults) remove(context.Context) error {
	l.f.Remove()
	return nil
}

// cleanup removes the fault; the in-process broker goes with the run.
func (l *localFaults) cleanup(context.Context) error {
	if l.f != nil {
		l.f.Remove()
	}
	return nil
}

// partitionTopic is the lab's topic: two partitions, one per member.
func partitionTopic(group string) map[string]int32 { return map[string]int32{group: 2} }

// producePartitionRecords produces values to one partition with a kgo
// producer, each acknowledged before the next.
func producePartitionRecords(ctx context.Context, addr, topic string, partition int32, values ...string) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ClientID("lab-producer"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		return err
	}
	defer cl.Close()
	for _, v := range values {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: partition, Value: []byte(v)}).FirstErr(); err != nil {
			return fmt.Errorf("lab partition: produce to %s: %w", TP(topic, partition), err)
		}
	}
	return nil
}
