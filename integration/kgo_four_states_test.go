package integration

// The chapter's four states with real kgo clients and real records:
// membership and the generation's assignment (the coordinator's), a
// consumer's position and the records it holds (its own memory), and the
// committed offset (the broker's). The tests drive kgo consumers by hand:
// each polls, "processes" what the test tells it to (a ledger counts who
// processed each record and checks the bytes), and commits when the test
// says. The broker runs on the manual clock: sessions end only when the
// test ends them, in the expiry step or with ExpireMember.

import (
	"bytes"
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/broker"
	"github.com/minibroker/minibroker/coordinator"
	"github.com/minibroker/minibroker/internal/testutil"
)

// fourStatesTopic is the one-partition topic of these tests.
const fourStatesTopic = "payments"

// fourStatesSession is the session of every member; on the manual clock it
// ends only when a test ends it.
const fourStatesSession = 10 * time.Second

// startFourStatesBroker starts a broker on the manual clock with
// fourStatesTopic and puts payment-0 .. payment-9 at offsets 0-9.
func startFourStatesBroker(t *testing.T) *testBroker {
	t.Helper()
	b := startBroker(t, func(cfg *broker.Config) { cfg.Topics = map[string]int32{fourStatesTopic: 1} })
	kgoProduceValues(t, b, 0, 10)
	return b
}

// produceValues produces payment-<i> for i in [from, to) and insists that
// each lands at offset i.
func kgoProduceValues(t *testing.T, b *testBroker, from, to int) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.ClientID("producer"), kgo.DefaultProduceTopic(fourStatesTopic))
	require.NoError(t, err)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), kgoWait)
	defer cancel()
	var recs []*kgo.Record
	for i := from; i < to; i++ {
		recs = append(recs, &kgo.Record{Value: []byte("payment-" + strconv.Itoa(i)), Timestamp: time.UnixMilli(1704067200000 + int64(i)*1000)})
	}
	require.NoError(t, cl.ProduceSync(ctx, recs...).FirstErr())
	for i, r := range recs {
		require.Equal(t, int64(from+i), r.Offset)
	}
}

// kgoWorker is a kgo group consumer the test drives by hand: no
// autocommit, no commit on revoke; it processes and commits only when told.
type kgoWorker struct {
	name   string
	cl     *kgo.Client
	dialer *testutil.CutDialer
	held   []*kgo.Record // polled and not yet processed
	// gate, when not nil, holds kgo's OnPartitionsRevoked and
	// OnPartitionsLost until kill closes it: the member cannot re-join.
	gate     chan struct{}
	killOnce sync.Once
}

// newKgoWorker starts a consumer named name (its client id: member ids sort
// by name) in group on fourStatesTopic. heartbeat is its heartbeat
// interval; a worker that must never heartbeat during the test gets one as
// long as its session.
func newKgoWorker(t *testing.T, b *testBroker, name, group string, session, heartbeat time.Duration, gated bool) *kgoWorker {
	t.Helper()
	w := &kgoWorker{name: name, dialer: &testutil.CutDialer{}}
	if gated {
		w.gate = make(chan struct{})
	}
	gate := w.gate
	hold := func(context.Context, *kgo.Client, map[string][]int32) {
		if gate != nil {
			<-gate
		}
	}
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(b.Addr()),
		kgo.ClientID(name),
		kgo.Dialer(w.dialer.DialContext),
		kgo.ConsumerGroup(group),
		kgo.ConsumeTopics(fourStatesTopic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.DisableAutoCommit(),
		kgo.Balancers(kgo.RoundRobinBalancer()),
		kgo.SessionTimeout(session),
		kgo.HeartbeatInterval(heartbeat),
		kgo.FetchMaxWait(kgoFetchMaxWait),
		kgo.RetryBackoffFn(func(int) time.Duration { return kgoRetryBackoff }),
		kgo.OnPartitionsRevoked(hold),
		kgo.OnPartitionsLost(hold),
	)
	require.NoError(t, err)
	w.cl = cl
	t.Cleanup(w.kill)
	return w
}

// pollThrough polls until the worker holds the records up to offset last.
func (w *kgoWorker) pollThrough(t *testing.T, last int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), kgoWait)
	defer cancel()
	for len(w.held) == 0 || w.held[len(w.held)-1].Offset < last {
		fetches := w.cl.PollFetches(ctx)
		require.NoError(t, ctx.Err(), "%s never got offset %d; it holds %v", w.name, last, w.heldOffsets())
		w.held = append(w.held, fetches.Records()...)
	}
}

// heldOffsets lists the offsets the worker holds.
func (w *kgoWorker) heldOffsets() []int64 {
	out := make([]int64, len(w.held))
	for i, r := range w.held {
		out[i] = r.Offset
	}
	return out
}

// process processes the held records up to offset through, in order, into
// l, and returns the last one processed.
func (w *kgoWorker) process(t *testing.T, l *kgoLedger, through int64) *kgo.Record {
	t.Helper()
	var last *kgo.Record
	for len(w.held) > 0 && w.held[0].Offset <= through {
		last, w.held = w.held[0], w.held[1:]
		l.add(t, w.name, last)
	}
	return last
}

// kill cuts the worker off the network, as a crash looks to the broker,
// lets its callbacks through and shuts the client down without a leave
// reaching the broker. Only the first call does anything.
func (w *kgoWorker) kill() {
	w.killOnce.Do(func() {
		w.dialer.Cut()
		if w.gate != nil {
			close(w.gate)
		}
		canceled, cancel := context.WithCancel(context.Background())
		cancel()
		_ = w.cl.LeaveGroupContext(canceled)
		w.cl.Close()
	})
}

// kgoLedger counts who processed each record and keeps the first copy, to
// which every later one must be identical.
type kgoLedger struct {
	by    map[int64][]string
	first map[int64]*kgo.Record
}

func newKgoLedger() *kgoLedger {
	return &kgoLedger{by: map[int64][]string{}, first: map[int64]*kgo.Record{}}
}

func (l *kgoLedger) add(t *testing.T, name string, r *kgo.Record) {
	t.Helper()
	if first, ok := l.first[r.Offset]; ok {
		require.True(t, bytes.Equal(first.Value, r.Value) && bytes.Equal(first.Key, r.Key) && first.Timestamp.Equal(r.Timestamp) && len(first.Headers) == len(r.Headers),
			"offset %d: %s got %q at %v, first processed as %q at %v", r.Offset, name, r.Value, r.Timestamp, first.Value, first.Timestamp)
	} else {
		l.first[r.Offset] = r
	}
	l.by[r.Offset] = append(l.by[r.Offset], name)
}

// times returns, for offsets 0..n-1, who processed each.
func (l *kgoLedger) times(n int64) map[int64][]string {
	out := map[int64][]string{}
	for off := range n {
		out[off] = l.by[off]
	}
	return out
}

// duplicates counts the processings of offsets 0..n-1 beyond the first.
func (l *kgoLedger) duplicates(n int64) int {
	extra := 0
	for off := range n {
		extra += max(len(l.by[off])-1, 0)
	}
	return extra
}

// commitRecord commits the offset after r with CommitRecords and insists
// that it is stored.
func (w *kgoWorker) commitRecord(t *testing.T, r *kgo.Record) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), kgoWait)
	defer cancel()
	require.NoError(t, w.cl.CommitRecords(ctx, r), "%s commits %d", w.name, r.Offset+1)
}

// committed reads the group's committed offset of payments-0 through kadm.
func committed(t *testing.T, b *testBroker, group string) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), kgoWait)
	defer cancel()
	fetched, err := b.admin(t).FetchOffsets(ctx, group)
	require.NoError(t, err)
	require.NoError(t, fetched.Error())
	o, ok := fetched.Lookup(fourStatesTopic, 0)
	require.True(t, ok, "no committed offset for %s-0", fourStatesTopic)
	return o.At
}

// TestKgoFourStatesReplay is exercise 1 with kgo clients. A polls records
// 0-9 (its position is 10), processes 0-5, commits 6 with CommitRecords,
// processes 6-9 and is cut off the network: no commit, no LeaveGroup. The
// broker still counts it a member until the expiry step, on the manual
// clock moved past its session, removes it. B then joins and starts at the
// committed offset: it processes exactly 6-9 a second time, the same
// bytes, and commits 10.
func TestKgoFourStatesReplay(t *testing.T) {
	t.Parallel()
	b := startFourStatesBroker(t)
	const group = "replay"
	l := newKgoLedger()

	a := newKgoWorker(t, b, "a", group, fourStatesSession, kgoHeartbeat, false)
	a.pollThrough(t, 9)
	require.Equal(t, int64(0), a.held[0].Offset, "nothing committed: A starts at the log start")
	a.commitRecord(t, a.process(t, l, 5))
	a.process(t, l, 9)
	require.Equal(t, int64(6), committed(t, b, group))
	aID, _ := a.cl.GroupMetadata()

	a.kill()
	_, stillThere := b.member(group, aID)
	require.True(t, stillThere, "a crash tells the broker nothing: A is a member until its session ends")
	_, err := b.Advance(fourStatesSession + time.Millisecond)
	require.NoError(t, err)
	require.Equal(t, []coordinator.Expired{{Group: group, MemberID: aID}}, b.Expire())

	bw := newKgoWorker(t, b, "b", group, fourStatesSession, kgoHeartbeat, false)
	bw.pollThrough(t, 9)
	require.Equal(t, int64(6), bw.held[0].Offset, "B starts at the committed offset")
	bw.commitRecord(t, bw.process(t, l, 9))
	require.Equal(t, int64(10), committed(t, b, group))

	assert.Equal(t, map[int64][]string{
		0: {"a"}, 1: {"a"}, 2: {"a"}, 3: {"a"}, 4: {"a"}, 5: {"a"},
		6: {"a", "b"}, 7: {"a", "b"}, 8: {"a", "b"}, 9: {"a", "b"},
	}, l.times(10))
	assert.Equal(t, 4, l.duplicates(10), "records 6-9, processed twice")
}

// TestKgoFourStatesZombie is the zombie lab with kgo clients. A (whose
// heartbeat interval is as long as its session, so it never heartbeats
// during the test and never learns anything) processes 0-5, commits 6,
// processes 6 and 7 and holds 8 and 9. ExpireMember ends its session while
// it still believes it owns payments-0. B joins, starts at 6, processes 6-9
// and commits 10. Then A's commit of 8:
//
//   - fenced: A commits with kgo's CommitOffsetsSync, which sends its member
//     id and its old generation: ILLEGAL_GENERATION, nothing stored, the
//     committed offset stays B's 10; A drops 8 and 9.
//   - direct: the commit goes through kadm's CommitOffsets (generation -1, no
//     member id), which minibroker stores without a check: the committed
//     offset goes back to 8, and A, told nothing, processes 8 and 9.
//
// B then closes, and C joins and starts at the committed offset; a marker
// record at offset 10 shows where C's processing ends. Fenced: records 6
// and 7 are processed twice (2 duplicates). Direct: 6 and 7 twice, and 8
// and 9 three times (6 duplicates).
func TestKgoFourStatesZombie(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		fenced     bool
		committed  int64   // after A's commit of 8
		cProcesses []int64 // what C processes, the marker 10 included
		times      map[int64][]string
		duplicates int
	}{
		{
			name: "fenced", fenced: true, committed: 10, cProcesses: []int64{10},
			times: map[int64][]string{
				0: {"a"}, 1: {"a"}, 2: {"a"}, 3: {"a"}, 4: {"a"}, 5: {"a"},
				6: {"a", "b"}, 7: {"a", "b"}, 8: {"b"}, 9: {"b"},
			},
			duplicates: 2,
		},
		{
			name: "direct", committed: 8, cProcesses: []int64{8, 9, 10},
			times: map[int64][]string{
				0: {"a"}, 1: {"a"}, 2: {"a"}, 3: {"a"}, 4: {"a"}, 5: {"a"},
				6: {"a", "b"}, 7: {"a", "b"}, 8: {"b", "a", "c"}, 9: {"b", "a", "c"},
			},
			duplicates: 6,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := startFourStatesBroker(t)
			const group = "zombie"
			l := newKgoLedger()

			// A never heartbeats in the test, and its revoke and lost
			// callbacks hold kgo's re-join (which a fenced commit
			// triggers), so it stays the zombie it is.
			a := newKgoWorker(t, b, "a", group, 10*time.Minute, 10*time.Minute, true)
			a.pollThrough(t, 9)
			a.commitRecord(t, a.process(t, l, 5))
			a.process(t, l, 7)
			aID, aGen := a.cl.GroupMetadata()

			require.NoError(t, b.ExpireMember(group, aID))
			id, gen := a.cl.GroupMetadata()
			require.Equal(t, []any{aID, aGen}, []any{id, gen}, "A has not been told: it still believes its generation")

			bw := newKgoWorker(t, b, "b", group, fourStatesSession, kgoHeartbeat, false)
			bw.pollThrough(t, 9)
			require.Equal(t, int64(6), bw.held[0].Offset, "B starts at the committed offset")
			bw.commitRecord(t, bw.process(t, l, 9))
			require.Equal(t, int64(10), committed(t, b, group))

			if tc.fenced {
				req, resp := zombieCommitThroughKgo(t, a, 8)
				assert.Equal(t, aID, req.MemberID)
				assert.Equal(t, aGen, req.Generation, "kgo sends the generation A still believes")
				assert.Equal(t, map[int32]error{0: kerr.IllegalGeneration}, kgoCommitErrs(resp, fourStatesTopic))
				a.held = nil // refused: A drops what it holds
			} else {
				ctx, cancel := context.WithTimeout(context.Background(), kgoWait)
				resps, err := b.admin(t).CommitOffsets(ctx, group, kadm.OffsetsFromRecords(kgo.Record{Topic: fourStatesTopic, Partition: 0, Offset: 7}))
				cancel()
				require.NoError(t, err)
				require.NoError(t, resps.Error(), "a direct commit is stored unfenced")
				a.process(t, l, 9) // accepted: A carries on
			}
			require.Equal(t, tc.committed, committed(t, b, group))
			a.kill()

			bw.cl.Close() // a clean leave; B has committed all it processed
			require.Equal(t, tc.committed, committed(t, b, group), "B's leave committed nothing")
			kgoProduceValues(t, b, 10, 11) // the marker
			cw := newKgoWorker(t, b, "c", group, fourStatesSession, kgoHeartbeat, false)
			cw.pollThrough(t, 10)
			assert.Equal(t, tc.cProcesses, cw.heldOffsets(), "C starts at the committed offset")
			cw.process(t, l, 10)

			assert.Equal(t, tc.times, l.times(10))
			assert.Equal(t, tc.duplicates, l.duplicates(10))
		})
	}
}

// zombieCommitThroughKgo commits offset for payments-0 with the zombie's
// kgo client and returns what kgo sent and got.
func zombieCommitThroughKgo(t *testing.T, w *kgoWorker, offset int64) (*kmsg.OffsetCommitRequest, *kmsg.OffsetCommitResponse) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), kgoWait)
	defer cancel()
	var req *kmsg.OffsetCommitRequest
	var resp *kmsg.OffsetCommitResponse
	var err error
	w.cl.CommitOffsetsSync(ctx, kgoOffsets(fourStatesTopic, map[int32]int64{0: offset}), func(_ *kgo.Client, q *kmsg.OffsetCommitRequest, r *kmsg.OffsetCommitResponse, e error) {
		req, resp, err = q, r, e
	})
	require.NoError(t, err, "the request succeeds; the refusal is per partition")
	return req, resp
}
