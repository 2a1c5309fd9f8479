package clients

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// waitTimeout bounds every wait of a test: a group settling, records
// arriving, commits becoming visible, a client process exiting.
const waitTimeout = 30 * time.Second

// pollInterval is how often a wait re-reads broker state it cannot be told
// about (group descriptions, committed offsets).
const pollInterval = 25 * time.Millisecond

// heartbeat is the classic-group heartbeat interval the tests give every
// client (the clients default to 3 s). Members learn of a rebalance at their
// next heartbeat, so this bounds how long a join or a leave takes to settle.
const heartbeat = 250 * time.Millisecond

// maxLogBytes caps one client log; past it the oldest half is dropped, so a
// chatty debug log cannot grow without bound in a long test.
const maxLogBytes = 4 << 20

// clientLog collects one client's debug output for one test and writes it to
// t.Output() only if the test fails. Safe for concurrent use.
type clientLog struct {
	name string
	mu   sync.Mutex // guards buf
	buf  bytes.Buffer
}

// newClientLog returns an empty log named name. Create it before the client
// it records, so that its cleanup runs after the client's.
func newClientLog(t *testing.T, name string) *clientLog {
	t.Helper()
	l := &clientLog{name: name}
	t.Cleanup(func() {
		if !t.Failed() && os.Getenv("CLIENTS_LOG") == "" {
			return
		}
		l.mu.Lock()
		defer l.mu.Unlock()
		fmt.Fprintf(t.Output(), "---- %s log (%d bytes) ----\n", l.name, l.buf.Len())
		_, _ = t.Output().Write(l.buf.Bytes())
	})
	return l
}

// Write appends p as it is.
func (l *clientLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.buf.Len()+len(p) > maxLogBytes {
		rest := slices.Clone(l.buf.Bytes()[l.buf.Len()/2:])
		l.buf.Reset()
		l.buf.WriteString("[... earlier output dropped ...]\n")
		l.buf.Write(rest)
	}
	return l.buf.Write(p)
}

// String returns the log so far.
func (l *clientLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// Printf appends one line with a timestamp.
func (l *clientLog) Printf(format string, args ...any) {
	line := time.Now().Format("15:04:05.000 ") + fmt.Sprintf(format, args...)
	if !strings.HasSuffix(line, "\n") {
		line += "\n"
	}
	_, _ = l.Write([]byte(line))
}

// Println appends its arguments as one line (the sarama and kafka-go logger
// interfaces).
func (l *clientLog) Println(args ...any) { l.Printf("%s", fmt.Sprintln(args...)) }

// Print appends its arguments as one line.
func (l *clientLog) Print(args ...any) { l.Printf("%s", fmt.Sprint(args...)) }

// kgoLogger is a kgo logger writing timestamped lines to l.
func kgoLogger(l *clientLog, level kgo.LogLevel) kgo.Logger {
	return kgo.BasicLogger(l, level, func() string { return time.Now().Format("15:04:05.000 ") })
}

// newAdmin returns a kadm client for addr, closed at cleanup. kadm is the
// neutral reader of group state and commits in every scenario.
func newAdmin(t *testing.T, addr string) *kadm.Client {
	t.Helper()
	log := newClientLog(t, "kadm")
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(addr),
		kgo.WithLogger(kgoLogger(log, kgo.LogLevelInfo)),
	)
	if err != nil {
		t.Fatalf("kgo.NewClient: %v", err)
	}
	t.Cleanup(cl.Close)
	return kadm.NewClient(cl)
}

// poll calls check every pollInterval until it reports done, failing the
// test with check's last explanation at waitTimeout.
func poll(t *testing.T, what string, check func(ctx context.Context) (done bool, why string)) {
	t.Helper()
	if why, done := await(t.Context(), check); !done {
		t.Fatalf("%s: not within %v: %s", what, waitTimeout, why)
	}
}

// await calls check every pollInterval until it reports done, or until
// waitTimeout has passed or parent is done; then it returns false and
// check's last explanation. poll is await for a test's own goroutine;
// await serves where failing at once is not wanted (a cleanup, which runs
// after t.Context is done, so parent is another context there).
func await(parent context.Context, check func(ctx context.Context) (done bool, why string)) (string, bool) {
	ctx, cancel := context.WithTimeout(parent, waitTimeout)
	defer cancel()
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	last := ""
	for {
		done, why := check(ctx)
		if done {
			return "", true
		}
		if ctx.Err() == nil || last == "" {
			last = why // not the deadline's own error
		}
		select {
		case <-ctx.Done():
			return last, false
		case <-tick.C:
		}
	}
}

// waitSplit waits until group is Stable with exactly the members whose
// client ids are ids, each holding a non-empty share of topic's partitions,
// the shares disjoint and covering all of them. It returns each member's
// partitions, sorted. It asserts no particular split: the broker or the
// client's assignor chooses it (minibroker's coordinator assigns round-robin
// itself and ignores the leader's plan). consumerProtocol selects KIP-848's
// ConsumerGroupDescribe over the classic DescribeGroups.
func waitSplit(t *testing.T, addr string, adm *kadm.Client, consumerProtocol bool, group, topic string, partitions int32, ids ...string) map[string][]int32 {
	t.Helper()
	describe := describeClassic
	if consumerProtocol {
		describe = describeConsumer
	}
	var split map[string][]int32
	poll(t, fmt.Sprintf("group %s split over %v", group, ids), func(ctx context.Context) (bool, string) {
		var err error
		split, err = describe(ctx, adm, group, topic)
		if err != nil {
			return false, err.Error()
		}
		seen := make(map[int32]string)
		for id, ps := range split {
			for _, p := range ps {
				if other, dup := seen[p]; dup {
					return false, fmt.Sprintf("partition %d held by %s and %s", p, other, id)
				}
				seen[p] = id
			}
		}
		if !slices.Equal(slices.Sorted(maps.Keys(split)), slices.Sorted(slices.Values(ids))) {
			return false, fmt.Sprintf("members %v", split)
		}
		for id, ps := range split {
			if len(ps) == 0 {
				return false, fmt.Sprintf("member %s has no partition yet: %v", id, split)
			}
		}
		if int32(len(seen)) != partitions {
			return false, fmt.Sprintf("%d of %d partitions assigned: %v", len(seen), partitions, split)
		}
		if lagging := laggingMembers(addr, group); len(lagging) > 0 {
			return false, fmt.Sprintf("members %v have not learned the group's assignment yet", lagging)
		}
		return true, ""
	})
	return split
}

// describeClassic reads a classic group's members with DescribeGroups:
// client id -> sorted partitions of topic. The group must be Stable.
func describeClassic(ctx context.Context, adm *kadm.Client, group, topic string) (map[string][]int32, error) {
	described, err := adm.DescribeGroups(ctx, group)
	if err != nil {
		return nil, err
	}
	g := described[group]
	if g.Err != nil {
		return nil, g.Err
	}
	if g.State != "Stable" {
		return nil, fmt.Errorf("state %s", g.State)
	}
	split := make(map[string][]int32)
	for _, m := range g.Members {
		a, ok := m.Assigned.AsConsumer()
		if !ok {
			return nil, fmt.Errorf("member %s has no consumer assignment", m.ClientID)
		}
		var mine []int32
		for _, at := range a.Topics {
			if at.Topic == topic {
				mine = append(mine, at.Partitions...)
			}
		}
		slices.Sort(mine)
		split[m.ClientID] = mine
	}
	return split, nil
}

// describeConsumer reads a KIP-848 group's members with
// ConsumerGroupDescribe: client id -> sorted partitions. The group must be
// Stable and every member reconciled (its assignment is its target, at the
// group's epoch). Assignments name topics by id (kfake sends no names), so
// every assigned partition counts: the scenarios subscribe to one topic.
func describeConsumer(ctx context.Context, adm *kadm.Client, group, _ string) (map[string][]int32, error) {
	described, err := adm.DescribeConsumerGroups(ctx, group)
	if err != nil {
		return nil, err
	}
	g := described[group]
	if g.Err != nil {
		return nil, g.Err
	}
	if g.State != "Stable" {
		return nil, fmt.Errorf("state %s", g.State)
	}
	split := make(map[string][]int32)
	for _, m := range g.Members {
		if m.MemberEpoch != g.Epoch || !maps.EqualFunc(m.Assignment, m.TargetAssignment, maps.Equal) {
			return nil, fmt.Errorf("member %s at epoch %d (group %d) holds %v, target %v", m.ClientID, m.MemberEpoch, g.Epoch, m.Assignment, m.TargetAssignment)
		}
		var mine []int32
		for _, ps := range m.Assignment {
			for p := range ps {
				mine = append(mine, p)
			}
		}
		slices.Sort(mine)
		split[m.ClientID] = mine
	}
	return split, nil
}

// committed reads group's committed offsets for topic with kadm
// (OffsetFetch), partition -> offset.
func committed(t *testing.T, adm *kadm.Client, group, topic string) map[int32]int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
	defer cancel()
	got, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		t.Fatalf("FetchOffsets %s: %v", group, err)
	}
	return committedOf(got, topic)
}

func committedOf(got kadm.OffsetResponses, topic string) map[int32]int64 {
	out := make(map[int32]int64)
	for p, r := range got[topic] {
		if r.Err == nil && r.At >= 0 {
			out[p] = r.At
		}
	}
	return out
}

// waitCommitted waits until group's commits for topic equal want
// (partition -> offset), for clients that commit on a timer.
func waitCommitted(t *testing.T, adm *kadm.Client, group, topic string, want map[int32]int64) {
	t.Helper()
	poll(t, fmt.Sprintf("group %s commits %v", group, want), func(ctx context.Context) (bool, string) {
		got, err := adm.FetchOffsets(ctx, group)
		if err != nil {
			return false, err.Error()
		}
		c := committedOf(got, topic)
		return maps.Equal(c, want), fmt.Sprintf("committed %v", c)
	})
}

// endOffsets lists topic's high watermarks, partition -> offset.
func endOffsets(t *testing.T, adm *kadm.Client, topic string) map[int32]int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
	defer cancel()
	listed, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatalf("ListEndOffsets %s: %v", topic, err)
	}
	out := make(map[int32]int64)
	for p, o := range listed[topic] {
		if o.Err != nil {
			t.Fatalf("ListEndOffsets %s/%d: %v", topic, p, o.Err)
		}
		out[p] = o.Offset
	}
	return out
}
