package server

import (
	"bytes"
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/testkit/wiretest"
)

// addControl installs fn for key; cleanup removes it.
func (e *env) addControl(key int16, fn Control) *ControlHandle {
	e.t.Helper()
	h, err := e.srv.Faults().AddControl(key, fn)
	require.NoError(e.t, err)
	e.t.Cleanup(h.Remove)
	return h
}

// seen is one request as a control saw it.
type seen struct {
	key, version int16
	clientID     string
	request      kmsg.Request
}

// TestControlSeesEveryRequest: a control that answers nothing sees every
// request, in order, with its key, version, client id, address and
// decoded body, and each is handled as usual.
func TestControlSeesEveryRequest(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	addr := e.serve()
	var mu sync.Mutex
	var got []seen
	var remotes []string
	e.addControl(-1, func(cr *ControlRequest) (kmsg.Response, error) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, seen{cr.Key, cr.Version, cr.ClientID, cr.Request})
		remotes = append(remotes, cr.Remote)
		return nil, nil
	})
	c := wiretest.Dial(t, addr, "watched")
	av := wiretest.Do[*kmsg.ApiVersionsResponse](t, c, apiVersionsRequest(3))
	require.Zero(t, av.ErrorCode)
	jr := wiretest.Do[*kmsg.JoinGroupResponse](t, c, joinRequest(4, "g", "", "orders"))
	require.Equal(t, kerr.MemberIDRequired.Code, jr.ErrorCode, "let through: the handler answers")

	mu.Lock()
	defer mu.Unlock()
	require.Len(t, got, 2)
	require.Equal(t, []int16{18, 11}, []int16{got[0].key, got[1].key})
	require.Equal(t, []int16{3, 4}, []int16{got[0].version, got[1].version})
	require.Equal(t, "watched", got[1].clientID)
	require.Equal(t, "g", got[1].request.(*kmsg.JoinGroupRequest).Group)
	require.Equal(t, c.LocalAddr(), remotes[1])
}

// TestControlAnswersAndNothingIsApplied: a request a control answers gets
// that answer, at the request's version, and its handler never runs: a
// join adds no member, a commit stores nothing, a produce appends
// nothing; a Produce with acks 0 gets no answer. Requests of other APIs
// pass.
func TestControlAnswersAndNothingIsApplied(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	addr := e.serve()
	for _, key := range []int16{11, 8, 0} {
		e.addControl(key, func(cr *ControlRequest) (kmsg.Response, error) {
			switch req := cr.Request.(type) {
			case *kmsg.JoinGroupRequest:
				resp := kmsg.NewPtrJoinGroupResponse()
				resp.ErrorCode = kerr.NotCoordinator.Code
				return resp, nil
			case *kmsg.OffsetCommitRequest:
				resp := req.ResponseKind().(*kmsg.OffsetCommitResponse)
				resp.Topics = []kmsg.OffsetCommitResponseTopic{{Topic: "orders", Partitions: []kmsg.OffsetCommitResponseTopicPartition{{Partition: 0}}}}
				return resp, nil
			case *kmsg.ProduceRequest:
				resp := req.ResponseKind().(*kmsg.ProduceResponse)
				resp.Topics = []kmsg.ProduceResponseTopic{{Topic: "orders", Partitions: []kmsg.ProduceResponseTopicPartition{{Partition: 0, BaseOffset: 41}}}}
				return resp, nil
			}
			return nil, nil
		})
	}
	c := wiretest.Dial(t, addr, "c")
	jr := wiretest.Do[*kmsg.JoinGroupResponse](t, c, joinRequest(4, "g", "", "orders"))
	require.Equal(t, kerr.NotCoordinator.Code, jr.ErrorCode)
	require.Equal(t, int16(4), jr.Version, "answered at the request's version")
	_, ok := e.coord.Describe("g")
	require.False(t, ok, "the answered join added nobody")

	commit := kmsg.NewPtrOffsetCommitRequest()
	commit.Version, commit.Group, commit.Generation = 8, "direct", -1
	commit.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "orders", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 7, LeaderEpoch: -1}}}}
	cr := wiretest.Do[*kmsg.OffsetCommitResponse](t, c, commit)
	require.Zero(t, cr.Topics[0].Partitions[0].ErrorCode)
	require.Empty(t, e.coord.Committed("direct"), "the answered commit stored nothing")

	pr := wiretest.Do[*kmsg.ProduceResponse](t, c, produceRequest(9, "orders", map[int32][]byte{0: batch("x")}))
	require.Equal(t, int64(41), pr.Topics[0].Partitions[0].BaseOffset, "the control's answer")
	acks0 := produceRequest(9, "orders", map[int32][]byte{0: batch("y")})
	acks0.Acks = 0
	require.NoError(t, c.Send(rawRequest(acks0, 99, "c")))
	hb := wiretest.Do[*kmsg.HeartbeatResponse](t, c, wiretest.HeartbeatRequest(4, "g", "nobody", 1))
	require.Equal(t, kerr.UnknownMemberID.Code, hb.ErrorCode, "the next answer is the heartbeat's: acks 0 got none")
	_, hw, err := e.log.Offsets("orders", 0)
	require.NoError(t, err)
	require.Zero(t, hw, "neither answered produce appended anything")
}

// TestControlErrorClosesTheConnection: a control's error closes the
// connection after the answers owed before the request, which is not
// applied; an answer of another API closes it too.
func TestControlErrorClosesTheConnection(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	addr := e.serve()
	e.addControl(11, func(cr *ControlRequest) (kmsg.Response, error) {
		if cr.ClientID == "wrong" {
			return kmsg.NewPtrHeartbeatResponse(), nil
		}
		return nil, errors.New("cut")
	})
	c := wiretest.Dial(t, addr, "c")
	require.NoError(t, c.Send(append(rawRequest(apiVersionsRequest(3), 1, "c"), rawRequest(joinRequest(4, "g", "", "orders"), 2, "c")...)))
	require.NoError(t, c.SetDeadline(time.Now().Add(testTimeout)))
	frame, err := c.ReadFrame()
	require.NoError(t, err, "the ApiVersions before it is answered")
	require.Equal(t, []byte{0, 0, 0, 1}, frame[:4])
	wiretest.RequireClosed(t, c)
	_, ok := e.coord.Describe("g")
	require.False(t, ok)
	eventually(t, testTimeout, func() bool { return len(e.logs.Find("closing connection")) == 1 }, "the close is logged")
	require.Equal(t, "connection closed by a control 1: cut", e.logs.Find("closing connection")[0].Attrs["err"])

	wrong := wiretest.Dial(t, addr, "wrong")
	require.NoError(t, wrong.Send(rawRequest(joinRequest(4, "g", "", "orders"), 1, "wrong")))
	wiretest.RequireClosed(t, wrong)
	eventually(t, testTimeout, func() bool { return len(e.logs.Find("closing connection")) == 2 }, "the close is logged")
	require.Equal(t, "connection closed by a control 1: it answered JoinGroup with a Heartbeat response", e.logs.Find("closing connection")[1].Attrs["err"])
}

// TestControlRemove: a removed control is called no more, and a control
// may remove itself (one request, as kfake's default); removal is
// idempotent and the last removal restores dispatch's fast path.
func TestControlRemove(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	addr := e.serve()
	var once *ControlHandle
	once = e.addControl(12, func(cr *ControlRequest) (kmsg.Response, error) {
		once.Remove()
		resp := kmsg.NewPtrHeartbeatResponse()
		resp.ErrorCode = kerr.RebalanceInProgress.Code
		return resp, nil
	})
	every := e.addControl(-1, func(*ControlRequest) (kmsg.Response, error) { return nil, nil })
	c := wiretest.Dial(t, addr, "c")
	hb := func() int16 {
		return wiretest.Do[*kmsg.HeartbeatResponse](t, c, wiretest.HeartbeatRequest(4, "g", "nobody", 1)).ErrorCode
	}
	require.Equal(t, kerr.RebalanceInProgress.Code, hb())
	require.Equal(t, kerr.UnknownMemberID.Code, hb(), "removed by itself: the handler answers")
	require.Equal(t, int64(1), once.Calls())
	require.Equal(t, int64(1), every.Calls(), "it answered the first, so the later control did not see it")
	require.False(t, e.srv.Faults().idle())
	every.Remove()
	every.Remove()
	require.True(t, e.srv.Faults().idle())
	require.Equal(t, kerr.UnknownMemberID.Code, hb())
	require.Equal(t, int64(1), every.Calls())
}

// TestControlComesBeforeFaults: a request a control answers meets no
// fault; one it lets through does.
func TestControlComesBeforeFaults(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	addr := e.serve()
	f := e.inject(Fault{Keys: []int16{12}, Err: kerr.NotCoordinator.Code, Count: -1})
	e.addControl(12, func(cr *ControlRequest) (kmsg.Response, error) {
		if cr.ClientID != "answered" {
			return nil, nil
		}
		resp := kmsg.NewPtrHeartbeatResponse()
		resp.ErrorCode = kerr.IllegalGeneration.Code
		return resp, nil
	})
	answered, through := wiretest.Dial(t, addr, "answered"), wiretest.Dial(t, addr, "through")
	hb := wiretest.HeartbeatRequest(4, "g", "nobody", 1)
	require.Equal(t, kerr.IllegalGeneration.Code, wiretest.Do[*kmsg.HeartbeatResponse](t, answered, hb).ErrorCode)
	require.Zero(t, f.Hits())
	require.Equal(t, kerr.NotCoordinator.Code, wiretest.Do[*kmsg.HeartbeatResponse](t, through, hb).ErrorCode)
	require.Equal(t, int64(1), f.Hits())
}

// TestControlMayKeepTheRequest: a control may keep a request past its
// call: while it is installed, a large Produce frame is not given back to
// the buffer pool, so the records it kept are not overwritten by the
// frames after it.
func TestControlMayKeepTheRequest(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	addr := e.serve()
	var mu sync.Mutex
	var kept []*kmsg.ProduceRequest
	e.addControl(0, func(cr *ControlRequest) (kmsg.Response, error) {
		mu.Lock()
		defer mu.Unlock()
		kept = append(kept, cr.Request.(*kmsg.ProduceRequest))
		return nil, nil
	})
	c := wiretest.Dial(t, addr, "p")
	var sent [][]byte
	for i := range 20 {
		b := benchBatch(64 << 10) // a large frame: a pooled one
		b[len(b)-1] = byte(i)     // make each batch differ (the CRC is not checked here)
		sent = append(sent, b)
		req := produceRequest(9, "orders", map[int32][]byte{0: b})
		_ = wiretest.Do[*kmsg.ProduceResponse](t, c, req)
	}
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, kept, 20)
	for i, req := range kept {
		require.True(t, bytes.Equal(sent[i], req.Topics[0].Partitions[0].Records), "request %d's records were overwritten", i)
	}
}

// TestControlWaitsUntilShutdown: a control may block; one that waits on
// its request's context lets the server stop (env's cleanup requires
// Serve to return in time).
func TestControlWaitsUntilShutdown(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	addr := e.serve()
	var waiting atomic.Int32
	e.addControl(12, func(cr *ControlRequest) (kmsg.Response, error) {
		waiting.Add(1)
		<-cr.Context().Done()
		return nil, cr.Context().Err()
	})
	c := wiretest.Dial(t, addr, "c")
	require.NoError(t, c.Send(rawRequest(wiretest.HeartbeatRequest(4, "g", "m", 1), 1, "c")))
	eventually(t, testTimeout, func() bool { return waiting.Load() == 1 }, "the control holds the heartbeat")
	other := wiretest.Dial(t, addr, "other")
	av := wiretest.Do[*kmsg.ApiVersionsResponse](t, other, apiVersionsRequest(3))
	require.Zero(t, av.ErrorCode, "it holds only its own connection")
}

// TestAddControlRefuses: a nil function, or a key the broker does not
// serve.
func TestAddControlRefuses(t *testing.T) {
	t.Parallel()
	fs := NewFaults(nil, nil)
	_, err := fs.AddControl(12, nil)
	require.EqualError(t, err, "control: nil function")
	_, err = fs.AddControl(9999, func(*ControlRequest) (kmsg.Response, error) { return nil, nil })
	require.EqualError(t, err, "control: API key 9999 is not one this broker serves")
	require.True(t, fs.idle())
}

// TestControlsUnderConcurrentRequests: eight connections heartbeat while
// controls are added and removed (run with -race): a control that stays
// installed throughout is called for every request, and the answers are
// either its or the handler's.
func TestControlsUnderConcurrentRequests(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	addr := e.serve()
	steady := e.addControl(12, func(*ControlRequest) (kmsg.Response, error) { return nil, nil })
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			h, err := e.srv.Faults().AddControl(12, func(*ControlRequest) (kmsg.Response, error) {
				resp := kmsg.NewPtrHeartbeatResponse()
				resp.ErrorCode = kerr.RebalanceInProgress.Code
				return resp, nil
			})
			if err != nil {
				t.Error(err)
				return
			}
			h.Remove()
		}
	})
	var clients sync.WaitGroup
	codes := make(chan int16, 8*40)
	for range 8 {
		c := wiretest.Dial(t, addr, "c")
		clients.Go(func() {
			for range 40 {
				ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
				resp, err := c.Request(ctx, wiretest.HeartbeatRequest(4, "g", "nobody", 1))
				cancel()
				if err != nil {
					t.Error(err)
					return
				}
				codes <- resp.(*kmsg.HeartbeatResponse).ErrorCode
			}
		})
	}
	clients.Wait()
	close(stop)
	wg.Wait()
	close(codes)
	for code := range codes {
		require.Contains(t, []int16{kerr.RebalanceInProgress.Code, kerr.UnknownMemberID.Code}, code)
	}
	require.Equal(t, int64(8*40), steady.Calls())
}
