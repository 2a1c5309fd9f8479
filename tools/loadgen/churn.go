package loadgen

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// measureChurn runs one window of a Churn scenario: each connection is one
// member that leaves its group and joins again, over and over. A
// rebalance is one new generation; the rate is generations per second
// across the groups, read from the generations the members are handed.
// The latency is a member's join: from its first JoinGroup to its
// successful SyncGroup. At the end of the window every worker finishes
// its cycle, leave included, so the next window starts from an empty
// group.
func (s *Session) measureChurn(ctx context.Context, r *Result) {
	sc := &s.sc
	now := time.Now()
	w := window{start: now.Add(sc.Warmup), end: now.Add(sc.Warmup + sc.Duration)}
	workers := make([]*churnWorker, len(s.conns))
	var wg sync.WaitGroup
	for i, c := range s.conns {
		cw := &churnWorker{c: c, sc: sc, g: s.g, w: w, group: sc.group(i % sc.Groups), gen: &s.gens[i%sc.Groups],
			hist: NewHistogram(), codes: map[int16]int64{}}
		workers[i] = cw
		wg.Go(cw.run)
	}
	var genStart int64
	total := func() int64 {
		var n int64
		for i := range s.gens {
			n += int64(s.gens[i].Load())
		}
		return n
	}
	measure(ctx, s.t, w, r, func() { genStart = total() }, func() { r.Ops = total() - genStart })
	if !waitOrClose(&wg, s.conns) {
		s.broken = fmt.Errorf("loadgen: %s: members still mid-cycle %v after the window", sc.Name, stopGrace)
	}
	for _, cw := range workers {
		r.Cycles += cw.cycles
		r.Requests += cw.requests
		r.Latency.Merge(cw.hist)
		r.Codes = addCodes(r.Codes, cw.codes)
		if cw.err != nil && r.Err == nil {
			r.Err = cw.err
		}
	}
	if r.Err != nil && s.broken == nil {
		s.broken = r.Err
	}
	r.Unexpected = unexpected(sc, r.Codes)
}

// churnWorker is one member of a churning group.
type churnWorker struct {
	c     *Conn
	sc    *Scenario
	g     *groupSpec
	w     window
	group string
	gen   *atomic.Int32

	cycles, requests int64
	hist             *Histogram
	codes            map[int16]int64
	err              error
}

// errStop ends a worker's loop once the window is over.
var errStop = errors.New("stop")

// do sends one request and counts its answer in the window.
func (cw *churnWorker) do(req kmsg.Request) (kmsg.Response, error) {
	resp, err := cw.c.Do(req)
	now := time.Now()
	if err != nil {
		if now.Before(cw.w.end) {
			return nil, err
		}
		return nil, errStop
	}
	if cw.w.in(now) {
		cw.requests++
	}
	return resp, nil
}

// count counts a non-zero code, in the warmup and the drain too: none is
// hidden.
func (cw *churnWorker) count(code int16) {
	if code != 0 {
		cw.codes[code]++
	}
}

func (cw *churnWorker) seen(gen int32) {
	for {
		old := cw.gen.Load()
		if gen <= old || cw.gen.CompareAndSwap(old, gen) {
			return
		}
	}
}

func (cw *churnWorker) run() {
	for time.Now().Before(cw.w.end) {
		if err := cw.cycle(); err != nil {
			if !errors.Is(err, errStop) {
				cw.err = err
			}
			return
		}
	}
}

// cycle joins the group as a new member, syncs, and leaves again. A cycle
// cut short (the window is long over, or the connection failed) still
// tries to leave, so that no member lingers in the group: a server with a
// join barrier would wait for it until the rebalance timeout.
func (cw *churnWorker) cycle() (err error) {
	start := time.Now()
	id, left := "", false
	defer func() {
		if err != nil && id != "" && !left {
			_ = cw.c.SetDeadline(time.Now().Add(time.Second))
			_, _ = cw.c.Do(leaveRequest(cw.group, id))
			_ = cw.c.SetDeadline(time.Time{})
		}
	}()
	resp, err := cw.do(cw.g.join(cw.group, ""))
	if err != nil {
		return err
	}
	jr := resp.(*kmsg.JoinGroupResponse)
	cw.count(jr.ErrorCode)
	id = jr.MemberID
	joined := jr.ErrorCode == 0 // the floor joins at once
	if !joined && jr.ErrorCode != kerr.MemberIDRequired.Code {
		return fmt.Errorf("loadgen: %s: first join: %s", cw.group, kerr.ErrorForCode(jr.ErrorCode))
	}
	for {
		if !time.Now().Before(cw.w.end.Add(stopGrace)) {
			return errStop
		}
		if !joined {
			resp, err := cw.do(cw.g.join(cw.group, id))
			if err != nil {
				return err
			}
			jr = resp.(*kmsg.JoinGroupResponse)
			if cw.count(jr.ErrorCode); jr.ErrorCode != 0 {
				if jr.ErrorCode == kerr.RebalanceInProgress.Code {
					continue
				}
				return nil // dropped from the group: start a new cycle
			}
		}
		joined = false
		cw.seen(jr.Generation)
		var plan []kmsg.JoinGroupResponseMember
		if jr.LeaderID == id {
			plan = jr.Members
		}
		resp, err := cw.do(cw.g.sync(cw.group, id, jr.Generation, plan))
		if err != nil {
			return err
		}
		sr := resp.(*kmsg.SyncGroupResponse)
		if cw.count(sr.ErrorCode); sr.ErrorCode == 0 {
			break
		}
		if sr.ErrorCode == kerr.UnknownMemberID.Code {
			return nil
		}
	}
	done := time.Now()
	if cw.w.in(done) {
		cw.cycles++
		cw.hist.Record(done.Sub(start))
	}
	resp, err = cw.do(leaveRequest(cw.group, id))
	if err != nil {
		return err
	}
	left = true
	cw.count(resp.(*kmsg.LeaveGroupResponse).ErrorCode)
	return nil
}
