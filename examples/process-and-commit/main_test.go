package main

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/broker"
	"github.com/minibroker/minibroker/internal/testutil"
	"github.com/minibroker/minibroker/records"
	"github.com/minibroker/minibroker/wireclient"
)

// The test's group and topic: two partitions, one per instance.
const (
	testGroup = "pc"
	testTopic = "orders"
	waitFor   = 20 * time.Second
)

// TestProcessAndCommitSurvivorReplaysFromTheCommittedOffset runs two
// instances, a and b, one partition each. Round 1 puts three records in
// each partition; both process and commit them. Round 2 puts five more in
// each, one batch per partition. a processes orders-0's 3, 4 and 5 and
// crashes (--crash-after 6): no commit, and its connections are cut, so no
// LeaveGroup either. Its session ends (ExpireMember, the broker's expiry
// step for one member); b is fenced at its next heartbeat, loses orders-1
// without committing (it had committed all of it), re-joins with both
// partitions and starts orders-0 at a's committed offset, 3. Exactly
// orders-0 offsets 3, 4 and 5 are processed twice, the same values.
func TestProcessAndCommitSurvivorReplaysFromTheCommittedOffset(t *testing.T) {
	t.Parallel()
	b, err := broker.Start(context.Background(), broker.Config{Topics: map[string]int32{testTopic: 2}, DataDir: t.TempDir()})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, b.Close()) })

	a := startInstance(t, b, "a", 6)
	waitLog(t, a, "assigned orders [0 1]")
	bi := startInstance(t, b, "b", 0)
	waitLog(t, bi, "assigned orders [1]")
	waitLog(t, a, "assigned orders [0]")

	produce(t, b, 0, 3)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("a printed:\n%s\na logged:\n%s\nb printed:\n%s\nb logged:\n%s", a.out, a.log, bi.out, bi.log)
		}
	})
	waitCommitted(t, b, map[int32]int64{0: 3, 1: 3})
	produce(t, b, 3, 8)

	select {
	case <-a.finished:
		require.ErrorIs(t, a.err, errCrashed)
	case <-time.After(waitFor):
		t.Fatalf("a never crashed; it printed:\n%s", a.out.String())
	}
	waitCommitted(t, b, map[int32]int64{0: 3, 1: 8})
	aID := memberIDOf(t, b, "a")
	require.NotEmpty(t, aID, "a crash tells the broker nothing: a is still a member")
	require.NoError(t, b.ExpireMember(testGroup, aID))

	waitLog(t, bi, "assigned orders [0 1]")
	waitCommitted(t, b, map[int32]int64{0: 8, 1: 8})
	bi.stop(t)

	aDid, bDid := a.processed(t), bi.processed(t)
	assert.Equal(t, []string{"0 0 r0-0", "0 1 r0-1", "0 2 r0-2", "0 3 r0-3", "0 4 r0-4", "0 5 r0-5"}, aDid)
	var twice []string
	for _, line := range bDid {
		if slices.Contains(aDid, line) {
			twice = append(twice, line)
		}
	}
	assert.Equal(t, []string{"0 3 r0-3", "0 4 r0-4", "0 5 r0-5"}, twice, "processed twice: what a processed after its last commit")
	assert.Len(t, bDid, 8+5, "b: all of orders-1, and orders-0 from a's committed offset")
	assert.Contains(t, a.log.String(), "crashing after 6 records, without committing")
	assert.Contains(t, bi.log.String(), "lost orders [1]; all it processed was committed")
}

// instance is one run of the example, in a goroutine.
type instance struct {
	name     string
	out, log *syncBuffer
	cut      *testutil.CutDialer
	cancel   context.CancelFunc
	finished chan struct{} // closed when run has returned
	err      error         // what run returned; read after finished
}

// startInstance runs the example as name (its client id, so member ids
// sort by name) with a short heartbeat interval; crashAfter as the flag.
func startInstance(t *testing.T, b *broker.Broker, name string, crashAfter int) *instance {
	t.Helper()
	in := &instance{name: name, out: &syncBuffer{}, log: &syncBuffer{}, cut: &testutil.CutDialer{}, finished: make(chan struct{})}
	cfg := config{
		brokers: []string{b.Addr()}, group: testGroup, topic: testTopic,
		session: 30 * time.Second, crashAfter: crashAfter, crash: in.cut.Cut,
		opts: []kgo.Opt{
			kgo.ClientID(name), kgo.Dialer(in.cut.DialContext),
			kgo.HeartbeatInterval(100 * time.Millisecond), kgo.FetchMaxWait(100 * time.Millisecond),
			kgo.RetryBackoffFn(func(int) time.Duration { return 50 * time.Millisecond }),
		},
	}
	ctx, cancel := context.WithCancel(context.Background())
	in.cancel = cancel
	go func() {
		defer close(in.finished)
		in.err = run(ctx, cfg, in.out, in.log)
	}()
	t.Cleanup(func() {
		cancel()
		in.cut.Cut()
		<-in.finished
	})
	return in
}

// stop ends the instance the clean way and insists that it returns nil.
func (in *instance) stop(t *testing.T) {
	t.Helper()
	in.cancel()
	<-in.finished
	require.NoError(t, in.err)
}

// processed returns the instance's "partition offset value" lines.
func (in *instance) processed(t *testing.T) []string {
	t.Helper()
	return strings.Split(strings.TrimSpace(in.out.String()), "\n")
}

// waitLog waits until the instance's log has line.
func waitLog(t *testing.T, in *instance, line string) {
	t.Helper()
	eventually(t, func() string {
		if strings.Contains(in.log.String(), line+"\n") {
			return ""
		}
		return fmt.Sprintf("%s has not logged %q; its log:\n%s", in.name, line, in.log.String())
	})
}

// produce appends records from..to-1 to both partitions in one Produce
// request (acks all), one batch per partition, as the test's story
// needs: each round reaches a consumer in one fetch. A kgo producer
// cannot promise that: when the topic's metadata arrives after Flush, it
// sends the first record it re-buffers at once, in a batch of its own.
func produce(t *testing.T, b *broker.Broker, from, to int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	c, err := wireclient.Dial(ctx, b.Addr(), "produce")
	require.NoError(t, err)
	defer c.Close()
	req := kmsg.NewPtrProduceRequest()
	req.Version, req.Acks, req.TimeoutMillis = 7, -1, int32(waitFor.Milliseconds())
	topic := kmsg.NewProduceRequestTopic()
	topic.Topic = testTopic
	for p := range int32(2) {
		var recs []records.Record
		for i := from; i < to; i++ {
			recs = append(recs, records.Record{Value: fmt.Appendf(nil, "r%d-%d", p, i)})
		}
		part := kmsg.NewProduceRequestTopicPartition()
		part.Partition = p
		part.Records = records.EncodeBatch(records.BatchSpec{Records: recs, FirstTimestamp: time.Now().UnixMilli()})
		topic.Partitions = append(topic.Partitions, part)
	}
	req.Topics = append(req.Topics, topic)
	resp, err := c.Request(ctx, req)
	require.NoError(t, err)
	parts := resp.(*kmsg.ProduceResponse).Topics[0].Partitions
	require.Len(t, parts, 2)
	for _, pr := range parts {
		require.Zero(t, pr.ErrorCode, "partition %d", pr.Partition)
		require.Equal(t, int64(from), pr.BaseOffset, "partition %d: the round lands after the last", pr.Partition)
	}
}

// waitCommitted waits until the group's committed offsets are want.
func waitCommitted(t *testing.T, b *broker.Broker, want map[int32]int64) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()))
	require.NoError(t, err)
	defer cl.Close()
	adm := kadm.NewClient(cl)
	eventually(t, func() string {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		fetched, err := adm.FetchOffsets(ctx, testGroup)
		if err != nil {
			return err.Error()
		}
		got := map[int32]int64{}
		fetched.Each(func(r kadm.OffsetResponse) { got[r.Partition] = r.At })
		if fmt.Sprint(got) != fmt.Sprint(want) {
			return fmt.Sprintf("committed %v, want %v", got, want)
		}
		return ""
	})
}

// memberIDOf returns the member id of the group member whose client id is
// clientID, or "".
func memberIDOf(t *testing.T, b *broker.Broker, clientID string) string {
	t.Helper()
	view, _ := b.Coordinator().Describe(testGroup)
	for _, m := range view.Members {
		if m.ClientID == clientID {
			return m.MemberID
		}
	}
	return ""
}

// eventually polls cond every 20 ms until it returns "" or waitFor passes.
func eventually(t *testing.T, cond func() string) {
	t.Helper()
	testutil.Eventually(t, waitFor, cond)
}

// syncBuffer is a bytes.Buffer safe for one writer and concurrent readers.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.String()
}
