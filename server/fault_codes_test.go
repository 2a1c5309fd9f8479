package server

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/protocol"
	"github.com/minibroker/minibroker/testkit/wiretest"
)

// inject puts f in force on e's server and requires it valid.
func (e *env) inject(f Fault) *InjectedFault {
	e.t.Helper()
	h, err := e.srv.Faults().Inject(f)
	require.NoError(e.t, err)
	return h
}

// dispatchAs hands req to the server's dispatch, as a connection would
// with clientID in the header, and returns the typed response and the
// request state.
func dispatchAs[R kmsg.Response](e *env, clientID string, req kmsg.Request) (R, *request) {
	e.t.Helper()
	r := e.req(clientID, req.GetVersion())
	r.key = kmsg.Key(req.Key())
	resp, _ := e.srv.dispatch(r, req).(R)
	return resp, r
}

// TestFaultOffsetCommitPerPartition: a fault on one partition answers its
// code there and commits nothing for it; the other partitions of the same
// commit are stored.
func TestFaultOffsetCommitPerPartition(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	j := e.join("c", "g", "", "orders")
	e.inject(Fault{Keys: []int16{8}, Group: "g", Topic: "orders", Partitions: []int32{1}, Err: kerr.NotCoordinator.Code})
	req := commitRequest(9, "g", j.MemberID, j.Generation,
		commitPart{"orders", 0, 5, nil}, commitPart{"orders", 1, 6, nil}, commitPart{"orders", 2, 7, nil})
	resp, r := dispatchAs[*kmsg.OffsetCommitResponse](e, "c", req)
	got := map[int32]int16{}
	for _, p := range resp.Topics[0].Partitions {
		got[p.Partition] = p.ErrorCode
	}
	require.Len(t, resp.Topics, 1, "the faulted partition joins its topic's entry")
	require.Equal(t, map[int32]int16{0: 0, 1: kerr.NotCoordinator.Code, 2: 0}, got)
	require.Equal(t, kerr.NotCoordinator.Code, r.code, "the observer is told the fault's code")
	for p, want := range map[int32]int64{0: 5, 2: 7} {
		off, ok := e.coord.CommittedOffset("g", "orders", p)
		require.True(t, ok)
		require.Equal(t, want, off.Offset)
	}
	_, ok := e.coord.CommittedOffset("g", "orders", 1)
	require.False(t, ok, "the faulted partition is not committed")

	// Used up: the same commit is stored whole.
	resp, _ = dispatchAs[*kmsg.OffsetCommitResponse](e, "c", req)
	require.Equal(t, []int16{0, 0, 0}, wiretest.CommitCodes(t, req, resp))
	off, _ := e.coord.CommittedOffset("g", "orders", 1)
	require.Equal(t, int64(6), off.Offset)
}

// TestFaultOffsetCommitWhole: a fault without a topic filter answers every
// partition and stores none.
func TestFaultOffsetCommitWhole(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	j := e.join("c", "g", "", "orders")
	e.inject(Fault{Keys: []int16{8}, Member: j.MemberID, Err: kerr.RebalanceInProgress.Code})
	req := commitRequest(9, "g", j.MemberID, j.Generation, commitPart{"orders", 0, 5, nil}, commitPart{"orders", 3, 8, nil})
	resp, _ := dispatchAs[*kmsg.OffsetCommitResponse](e, "c", req)
	require.Equal(t, []int16{kerr.RebalanceInProgress.Code, kerr.RebalanceInProgress.Code}, wiretest.CommitCodes(t, req, resp))
	require.Empty(t, e.coord.Committed("g"))
}

// TestFaultProducePerPartition: the faulted partition appends nothing,
// the other one is appended.
func TestFaultProducePerPartition(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.inject(Fault{Keys: []int16{0}, Topic: "orders", Partitions: []int32{2}, Err: kerr.NotLeaderForPartition.Code})
	req := produceRequest(9, "orders", map[int32][]byte{1: batch("a"), 2: batch("b")})
	resp, _ := dispatchAs[*kmsg.ProduceResponse](e, "p", req)
	require.Len(t, resp.Topics, 1)
	got := map[int32]int16{}
	for _, p := range resp.Topics[0].Partitions {
		got[p.Partition] = p.ErrorCode
	}
	require.Equal(t, map[int32]int16{1: 0, 2: kerr.NotLeaderForPartition.Code}, got)
	for p, hw := range map[int32]int64{1: 1, 2: 0} {
		_, end, err := e.log.Offsets("orders", p)
		require.NoError(t, err)
		require.Equal(t, hw, end, "partition %d", p)
	}
}

// TestFaultProduceAcksZero: a produce with acks 0 is not answered, faulted
// or not, and its faulted partitions append nothing.
func TestFaultProduceAcksZero(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.inject(Fault{Keys: []int16{0}, Err: kerr.NotLeaderForPartition.Code})
	req := produceRequest(9, "orders", map[int32][]byte{0: batch("a")})
	req.Acks = 0
	r := e.req("p", 9)
	r.key = kmsg.Produce
	require.Nil(t, e.srv.dispatch(r, req))
	_, end, err := e.log.Offsets("orders", 0)
	require.NoError(t, err)
	require.Zero(t, end)
}

// TestFaultFetchAnswersAtOnce: a fetch whose partitions are all faulted
// answers their code without waiting its MaxWait; a fetch with one
// faulted partition reads the others.
func TestFaultFetchAnswersAtOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.produce("orders", 0, "x")
	e.inject(Fault{Keys: []int16{1}, Topic: "orders", Partitions: []int32{1}, Err: kerr.OffsetNotAvailable.Code, Count: -1})
	start := time.Now()
	resp, _ := dispatchAs[*kmsg.FetchResponse](e, "c", fetchRequest(12, time.Hour, "orders", 0, 1))
	require.Less(t, time.Since(start), testTimeout, "no wait for a fetch the fault answers whole")
	require.Len(t, resp.Topics, 1)
	require.Len(t, resp.Topics[0].Partitions, 1)
	p := resp.Topics[0].Partitions[0]
	require.Equal(t, int32(1), p.Partition)
	require.Equal(t, kerr.OffsetNotAvailable.Code, p.ErrorCode)
	require.Equal(t, int64(-1), p.HighWatermark)

	resp, _ = dispatchAs[*kmsg.FetchResponse](e, "c", fetchRequest(12, 0, "orders", 0, 0, 1))
	got := map[int32]int16{}
	for _, p := range resp.Topics[0].Partitions {
		got[p.Partition] = p.ErrorCode
		if p.Partition == 0 {
			require.Equal(t, []string{"0:x"}, values(t, p.RecordBatches))
		}
	}
	require.Equal(t, map[int32]int16{0: 0, 1: kerr.OffsetNotAvailable.Code}, got)
}

// TestFaultListOffsetsAndOffsetFetch: the read-only APIs answer the code
// on the faulted partitions and the usual answer on the others; an
// OffsetFetch fault without a topic filter is the group's code.
func TestFaultListOffsetsAndOffsetFetch(t *testing.T) {
	t.Parallel()
	e := newFetchEnv(t)
	e.produce("orders", 3, "a", "b")
	e.inject(Fault{Keys: []int16{2}, Topic: "orders", Partitions: []int32{0}, Err: kerr.LeaderNotAvailable.Code})
	lo := kmsg.NewPtrListOffsetsRequest()
	lo.Version = 7
	lt := kmsg.ListOffsetsRequestTopic{Topic: "orders"}
	for _, p := range []int32{0, 3} {
		lp := kmsg.NewListOffsetsRequestTopicPartition()
		lp.Partition, lp.Timestamp = p, -1
		lt.Partitions = append(lt.Partitions, lp)
	}
	lo.Topics = []kmsg.ListOffsetsRequestTopic{lt}
	lresp, _ := dispatchAs[*kmsg.ListOffsetsResponse](e, "c", lo)
	ps := lresp.Topics[0].Partitions
	require.Equal(t, [2]int16{kerr.LeaderNotAvailable.Code, 0}, [2]int16{ps[0].ErrorCode, ps[1].ErrorCode})
	require.Equal(t, [2]int64{-1, 2}, [2]int64{ps[0].Offset, ps[1].Offset})

	e.inject(Fault{Keys: []int16{9}, Group: "g", Topic: "orders", Partitions: []int32{2}, Err: kerr.UnstableOffsetCommit.Code})
	oresp, _ := dispatchAs[*kmsg.OffsetFetchResponse](e, "c", offsetFetchRequest(7, "g", map[string][]int32{"orders": {0, 2}}, "orders"))
	ops := oresp.Topics[0].Partitions
	require.Equal(t, [2]int16{0, kerr.UnstableOffsetCommit.Code}, [2]int16{ops[0].ErrorCode, ops[1].ErrorCode})
	require.Equal(t, [2]int64{10, -1}, [2]int64{ops[0].Offset, ops[1].Offset})

	e.inject(Fault{Keys: []int16{9}, Err: kerr.CoordinatorLoadInProgress.Code})
	oresp, _ = dispatchAs[*kmsg.OffsetFetchResponse](e, "c", offsetFetchRequest(7, "g", nil))
	require.Equal(t, kerr.CoordinatorLoadInProgress.Code, oresp.ErrorCode)
	require.Empty(t, oresp.Topics)

	e.inject(Fault{Keys: []int16{9}, Group: "g", Err: kerr.NotCoordinator.Code})
	v8 := kmsg.NewPtrOffsetFetchRequest()
	v8.Version = 8
	v8.Groups = []kmsg.OffsetFetchRequestGroup{{Group: "g"}, {Group: "other"}}
	oresp, _ = dispatchAs[*kmsg.OffsetFetchResponse](e, "c", v8)
	require.Len(t, oresp.Groups, 2)
	require.Equal(t, [2]int16{kerr.NotCoordinator.Code, 0}, [2]int16{oresp.Groups[0].ErrorCode, oresp.Groups[1].ErrorCode})
	require.Empty(t, oresp.Groups[0].Topics)
}

// TestFaultTopLevelCodes: an API without partition codes answers the
// fault's code at its top level, unhandled: a faulted JoinGroup adds no
// member, a faulted Heartbeat renews no lease, FindCoordinator names no
// coordinator.
func TestFaultTopLevelCodes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.inject(Fault{Keys: []int16{11}, Err: kerr.CoordinatorNotAvailable.Code})
	jresp, _ := dispatchAs[*kmsg.JoinGroupResponse](e, "c", joinRequest(3, "g", "", "orders"))
	require.Equal(t, kerr.CoordinatorNotAvailable.Code, jresp.ErrorCode)
	require.Equal(t, int32(-1), jresp.Generation)
	_, ok := e.coord.Describe("g")
	require.False(t, ok, "the faulted join made no group")

	j := e.join("c", "g", "", "orders")
	e.inject(Fault{Keys: []int16{12}, Member: j.MemberID, Err: kerr.RebalanceInProgress.Code})
	hresp, _ := dispatchAs[*kmsg.HeartbeatResponse](e, "c", wiretest.HeartbeatRequest(3, "g", j.MemberID, j.Generation))
	require.Equal(t, kerr.RebalanceInProgress.Code, hresp.ErrorCode)

	e.inject(Fault{Keys: []int16{10}, Group: "g", Err: kerr.CoordinatorNotAvailable.Code, Count: 2})
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.Version, fc.CoordinatorKeys = 4, []string{"g"}
	fresp, _ := dispatchAs[*kmsg.FindCoordinatorResponse](e, "c", fc)
	require.Len(t, fresp.Coordinators, 1)
	require.Equal(t, "g", fresp.Coordinators[0].Key)
	require.Equal(t, kerr.CoordinatorNotAvailable.Code, fresp.Coordinators[0].ErrorCode)
	require.Equal(t, int32(-1), fresp.Coordinators[0].NodeID)
	fc.Version, fc.CoordinatorKey, fc.CoordinatorKeys = 3, "g", nil
	fresp, _ = dispatchAs[*kmsg.FindCoordinatorResponse](e, "c", fc)
	require.Equal(t, kerr.CoordinatorNotAvailable.Code, fresp.ErrorCode)
}

// TestFaultEveryAPIWithACode: every API the broker serves that has an
// error code answers a fault's, at its oldest and newest version, without
// a panic.
func TestFaultEveryAPIWithACode(t *testing.T) {
	t.Parallel()
	for _, v := range protocol.SupportedVersions() {
		key := kmsg.Key(v.Key)
		if !hasErrorCode(key) {
			require.ErrorContains(t, (&Fault{Keys: []int16{v.Key}, Err: 15}).Validate(), "has no error code")
			continue
		}
		for _, version := range []int16{v.Min, v.Max} {
			e := newEnv(t)
			e.inject(Fault{Keys: []int16{v.Key}, Err: kerr.CoordinatorNotAvailable.Code})
			req := kmsg.RequestForKey(v.Key)
			req.SetVersion(version)
			r := e.req("c", version)
			r.key = key
			resp := e.srv.dispatch(r, req)
			if req, ok := req.(*kmsg.ProduceRequest); !ok || req.Acks != 0 {
				require.NotNil(t, resp, "%s v%d", kmsg.NameForKey(v.Key), version)
			}
			require.Equal(t, int64(1), e.srv.Faults().List()[0].Hits, "%s v%d", kmsg.NameForKey(v.Key), version)
		}
	}
}
