package server

import (
	"context"
	"errors"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/testkit/wiretest"
)

// TestFaultMatches: the filters are ANDed, an empty one matches anything,
// and a topic or partition filter needs a request that names one.
func TestFaultMatches(t *testing.T) {
	t.Parallel()
	commit := &faultTarget{groups: []string{"g"}, members: []string{"m1"}, topics: []topicParts{{"orders", []int32{0, 1}}}}
	heartbeat := &faultTarget{groups: []string{"g"}, members: []string{"m1"}}
	metadata := &faultTarget{topics: []topicParts{{topic: "orders"}}}
	for _, tc := range []struct {
		name   string
		fault  Fault
		key    kmsg.Key
		client string
		at     *faultTarget
		want   bool
	}{
		{"no filter", Fault{Drop: true}, kmsg.Heartbeat, "c", heartbeat, true},
		{"key matches", Fault{Keys: []int16{12, 8}, Drop: true}, kmsg.Heartbeat, "c", heartbeat, true},
		{"key differs", Fault{Keys: []int16{8}, Drop: true}, kmsg.Heartbeat, "c", heartbeat, false},
		{"group and member", Fault{Group: "g", Member: "m1", Drop: true}, kmsg.Heartbeat, "c", heartbeat, true},
		{"group matches, member differs", Fault{Group: "g", Member: "m2", Drop: true}, kmsg.Heartbeat, "c", heartbeat, false},
		{"group differs", Fault{Group: "h", Drop: true}, kmsg.Heartbeat, "c", heartbeat, false},
		{"client id", Fault{ClientID: "c", Drop: true}, kmsg.Heartbeat, "c", heartbeat, true},
		{"client id differs", Fault{ClientID: "d", Group: "g", Drop: true}, kmsg.Heartbeat, "c", heartbeat, false},
		{"topic on a request without topics", Fault{Topic: "orders", Drop: true}, kmsg.Heartbeat, "c", heartbeat, false},
		{"topic and partition", Fault{Topic: "orders", Partitions: []int32{1}, Drop: true}, kmsg.OffsetCommit, "c", commit, true},
		{"partition not named", Fault{Topic: "orders", Partitions: []int32{3}, Drop: true}, kmsg.OffsetCommit, "c", commit, false},
		{"partition of any topic", Fault{Partitions: []int32{0}, Drop: true}, kmsg.OffsetCommit, "c", commit, true},
		{"other topic", Fault{Topic: "payments", Drop: true}, kmsg.OffsetCommit, "c", commit, false},
		{"everything at once", Fault{Keys: []int16{8}, Group: "g", Member: "m1", ClientID: "c", Topic: "orders", Partitions: []int32{0}, Drop: true}, kmsg.OffsetCommit, "c", commit, true},
		{"a topic Metadata names", Fault{Topic: "orders", Delay: time.Second}, kmsg.Metadata, "c", metadata, true},
		{"a partition filter and Metadata", Fault{Topic: "orders", Partitions: []int32{0}, Delay: time.Second}, kmsg.Metadata, "c", metadata, false},
		{"a code skips APIs without one", Fault{Err: kerr.NotCoordinator.Code}, kmsg.Metadata, "c", metadata, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.want, tc.fault.matches(tc.key, tc.client, tc.at))
		})
	}
}

// TestFaultTargetOfRequests: what each API names is read where Kafka
// puts it.
func TestFaultTargetOfRequests(t *testing.T) {
	t.Parallel()
	leave := wiretest.LeaveRequest(3, "g", "m1", "m2")
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.Version, fc.CoordinatorKeys = 4, []string{"g", "h"}
	of := kmsg.NewPtrOffsetFetchRequest()
	of.Version = 9
	of.Groups = []kmsg.OffsetFetchRequestGroup{{Group: "g", MemberID: kmsg.StringPtr("m1"), Topics: []kmsg.OffsetFetchRequestGroupTopic{{Topic: "orders", Partitions: []int32{2}}}}}
	for _, tc := range []struct {
		req  kmsg.Request
		want faultTarget
	}{
		{wiretest.HeartbeatRequest(4, "g", "m1", 3), faultTarget{groups: []string{"g"}, members: []string{"m1"}}},
		{leave, faultTarget{groups: []string{"g"}, members: []string{"m1", "m2"}}},
		{fc, faultTarget{groups: []string{"g", "h"}}},
		{of, faultTarget{groups: []string{"g"}, members: []string{"m1"}, topics: []topicParts{{"orders", []int32{2}}}}},
		{fetchRequest(12, 0, "orders", 0, 1, 3), faultTarget{topics: []topicParts{{"orders", []int32{1, 3}}}}},
		{metadataRequest(12, []string{"orders"}), faultTarget{topics: []topicParts{{topic: "orders"}}}},
	} {
		require.Equal(t, tc.want, *targetOf(tc.req), kmsg.NameForKey(tc.req.Key()))
	}
}

// connCount returns how many connections the server serves now.
func (e *env) connCount() int {
	e.srv.mu.Lock()
	defer e.srv.mu.Unlock()
	return len(e.srv.conns)
}

// requireNoAnswer requires c to get no frame for a while: an answer that
// is never coming cannot be waited for to the end.
func requireNoAnswer(t *testing.T, c interface {
	SetDeadline(time.Time) error
	ReadFrame() ([]byte, error)
}) {
	t.Helper()
	require.NoError(t, c.SetDeadline(time.Now().Add(200*time.Millisecond)))
	frame, err := c.ReadFrame()
	var ne net.Error
	require.True(t, errors.As(err, &ne) && ne.Timeout(), "want no answer, got %x, %v", frame, err)
}

// TestFaultDropStallsTheConnection: a dropped heartbeat is not answered,
// nor is anything after it on its connection, and nothing after it is
// applied; another connection is served as usual, and the stalled one
// ends when its client closes it.
func TestFaultDropStallsTheConnection(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	addr := e.serve()
	j := e.join("c", "g", "", "orders")
	h := e.inject(Fault{Keys: []int16{12}, Group: "g", Member: j.MemberID, Drop: true})
	stalled := wiretest.Dial(t, addr, "c")
	hb := rawRequest(wiretest.HeartbeatRequest(4, "g", j.MemberID, j.Generation), 1, "c")
	join := rawRequest(joinRequest(4, "late", "", "orders"), 2, "c")
	require.NoError(t, stalled.Send(append(hb, join...)))
	eventually(t, testTimeout, func() bool { return h.Hits() == 1 }, "the heartbeat reaches the fault")

	other := wiretest.Dial(t, addr, "c")
	resp := wiretest.Do[*kmsg.HeartbeatResponse](t, other, wiretest.HeartbeatRequest(4, "g", j.MemberID, j.Generation))
	require.Zero(t, resp.ErrorCode, "the fault is used up; other connections are served")

	requireNoAnswer(t, stalled)
	_, ok := e.coord.Describe("late")
	require.False(t, ok, "the JoinGroup behind the dropped answer is not applied")
	require.Equal(t, 2, e.connCount())
	require.NoError(t, stalled.Close())
	eventually(t, testTimeout, func() bool { return e.connCount() == 1 }, "the stalled connection ends when its client closes it")
}

// TestFaultCloseWritesWhatIsOwed: a fault that closes the connection
// answers the requests before it, then closes, and the faulted request
// is not applied.
func TestFaultCloseWritesWhatIsOwed(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	addr := e.serve()
	e.inject(Fault{Keys: []int16{11}, ClientID: "c", Close: true})
	c := wiretest.Dial(t, addr, "c")
	require.NoError(t, c.Send(append(rawRequest(apiVersionsRequest(3), 1, "c"), rawRequest(joinRequest(4, "g", "", "orders"), 2, "c")...)))
	require.NoError(t, c.SetDeadline(time.Now().Add(testTimeout)))
	frame, err := c.ReadFrame()
	require.NoError(t, err, "the ApiVersions before the fault is answered")
	require.Equal(t, []byte{0, 0, 0, 1}, frame[:4], "correlation id 1")
	wiretest.RequireClosed(t, c)
	_, ok := e.coord.Describe("g")
	require.False(t, ok)
	require.Len(t, e.logs.Find("fault applied"), 1, "the fault is logged")

	again := wiretest.Dial(t, addr, "other")
	jresp := wiretest.Do[*kmsg.JoinGroupResponse](t, again, joinRequest(4, "g", "", "orders"))
	require.Equal(t, kerr.MemberIDRequired.Code, jresp.ErrorCode, "another client id is served")
}

// TestFaultDelayHoldsOnlyItsConnection: a delayed request holds its own
// connection, not the coordinator: another connection's heartbeat of the
// same group is answered meanwhile; a short delay answers as usual after
// it.
func TestFaultDelayHoldsOnlyItsConnection(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	addr := e.serve()
	j := e.join("c", "g", "", "orders")
	held := e.inject(Fault{Keys: []int16{12}, ClientID: "slow", Delay: MaxFaultDelay})
	slow := wiretest.Dial(t, addr, "slow")
	require.NoError(t, slow.Send(rawRequest(wiretest.HeartbeatRequest(4, "g", j.MemberID, j.Generation), 1, "slow")))
	eventually(t, testTimeout, func() bool { return held.Hits() == 1 }, "the slow heartbeat is held")
	fast := wiretest.Dial(t, addr, "fast")
	resp := wiretest.Do[*kmsg.HeartbeatResponse](t, fast, wiretest.HeartbeatRequest(4, "g", j.MemberID, j.Generation))
	require.Zero(t, resp.ErrorCode)

	const delay = 50 * time.Millisecond
	e.inject(Fault{Keys: []int16{12}, ClientID: "fast", Delay: delay})
	start := time.Now()
	resp = wiretest.Do[*kmsg.HeartbeatResponse](t, fast, wiretest.HeartbeatRequest(4, "g", j.MemberID, j.Generation))
	require.Zero(t, resp.ErrorCode, "a delayed request is handled")
	require.GreaterOrEqual(t, time.Since(start), delay)
	requireNoAnswer(t, slow)
}

// BenchmarkDispatchFaults measures dispatch, the one place faults are
// checked, for a Heartbeat: the handler called alone ("handler"), through
// dispatch with no fault nor control ("none": two atomic loads more), and with ten
// faults in force that do not match it ("unmatched": what requests pay
// while a lesson's faults are in force for others).
func BenchmarkDispatchFaults(b *testing.B) {
	srv := handlerBenchServer(b, 1)
	r := &request{ctx: b.Context(), logger: srv.logger, clientID: "bench",
		peer: &peer{remote: "127.0.0.1:40000", host: "/127.0.0.1"}, key: kmsg.JoinGroup, version: 3}
	j := srv.handleJoinGroup(r, joinRequest(3, "g", "", "bench")).(*kmsg.JoinGroupResponse)
	if j.ErrorCode != 0 {
		b.Fatalf("join: code %d", j.ErrorCode)
	}
	req := wiretest.HeartbeatRequest(4, "g", j.MemberID, j.Generation)
	r.key, r.version = kmsg.Heartbeat, 4
	run := func(b *testing.B, call func() kmsg.Response) {
		b.ReportAllocs()
		for b.Loop() {
			if code := call().(*kmsg.HeartbeatResponse).ErrorCode; code != 0 {
				b.Fatalf("heartbeat: code %d", code)
			}
		}
	}
	b.Run("handler", func(b *testing.B) {
		run(b, func() kmsg.Response { return srv.handlers[kmsg.Heartbeat].handle(srv, r, req) })
	})
	b.Run("none", func(b *testing.B) { run(b, func() kmsg.Response { return srv.dispatch(r, req) }) })
	b.Run("unmatched", func(b *testing.B) {
		for range 10 {
			if _, err := srv.Faults().Inject(Fault{Keys: []int16{12}, Group: "other", Drop: true, Count: -1}); err != nil {
				b.Fatal(err)
			}
		}
		run(b, func() kmsg.Response { return srv.dispatch(r, req) })
	})
}

// TestFaultCountUnderConcurrentRequests: eight connections heartbeat at
// once through a fault of count 100 and one until removed, which a
// ninth goroutine removes once the first is used up: exactly 100
// answers carry the first fault's code, the second's hits are exactly
// the answers with its code, and every other answer is NONE (run with
// -race).
func TestFaultCountUnderConcurrentRequests(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	addr := e.serve()
	j := e.join("c", "g", "", "orders")
	counted := e.inject(Fault{Keys: []int16{12}, Err: kerr.RebalanceInProgress.Code, Count: 100})
	forever := e.inject(Fault{Keys: []int16{12}, Err: kerr.NotCoordinator.Code, Count: -1})
	var wg sync.WaitGroup
	codes := make(chan int16, 8*40)
	for range 8 {
		c := wiretest.Dial(t, addr, "c")
		wg.Go(func() {
			for range 40 {
				ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
				resp, err := c.Request(ctx, wiretest.HeartbeatRequest(4, "g", j.MemberID, j.Generation))
				cancel()
				if err != nil {
					t.Error(err)
					return
				}
				codes <- resp.(*kmsg.HeartbeatResponse).ErrorCode
			}
		})
	}
	wg.Go(func() {
		if err := counted.Wait(t.Context()); err != nil {
			t.Error(err)
		}
		forever.Remove()
	})
	wg.Wait()
	close(codes)
	got := map[int16]int64{}
	for c := range codes {
		got[c]++
	}
	require.Equal(t, int64(100), got[kerr.RebalanceInProgress.Code])
	require.Equal(t, forever.Hits(), got[kerr.NotCoordinator.Code])
	require.Equal(t, int64(8*40), got[0]+got[kerr.RebalanceInProgress.Code]+got[kerr.NotCoordinator.Code])
	require.Zero(t, e.srv.Faults().Live())
}
