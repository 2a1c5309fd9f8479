package server

// What a fault does to a request on the wire (fault.go holds the
// registry). The one place faults and controls (control.go) are checked
// is dispatch, where a decoded request is handed to its handler; with no
// fault in force and no control installed it costs two atomic loads
// (BenchmarkDispatchFaults).

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// errFaultDrop and errFaultClose end the handling of a request a fault
// drops or closes (request.failed): serveConn stalls or closes the
// connection.
var (
	errFaultDrop  = errors.New("answer dropped by a fault")
	errFaultClose = errors.New("connection closed by a fault")
)

// dispatchFaulted offers the request to the controls, then applies the
// first fault that matches it, if any, and otherwise handles it as usual.
// A request a control answers meets no fault (kfake's rule too).
func (s *Server) dispatchFaulted(r *request, req kmsg.Request) kmsg.Response {
	if resp, answered := s.control(r, req); answered {
		return resp
	}
	h := s.faults.claim(r.key, r.clientID, targetOf(req))
	if h == nil {
		return s.handle(r, req)
	}
	f := &h.spec
	r.logger.Info("fault applied", "fault", h.id, "action", f.action(), "api", kmsg.NameForKey(int16(r.key)), "client_id", r.clientID)
	switch {
	case f.Delay > 0:
		t := time.NewTimer(f.Delay)
		defer t.Stop()
		select {
		case <-t.C:
		case <-r.ctx.Done():
			r.failed = fmt.Errorf("shutting down during the delay of fault %s", h.id)
			return nil
		}
		return s.handle(r, req)
	case f.Drop:
		r.failed = fmt.Errorf("%w %s", errFaultDrop, h.id)
		return nil
	case f.Close:
		r.failed = fmt.Errorf("%w %s", errFaultClose, h.id)
		return nil
	}
	return s.answerFault(r, req, f)
}

// stallAfterDrop keeps a connection whose answer a fault dropped open and
// silent: it reads the requests that follow and discards them, unhandled
// and unanswered, as if their answers were lost behind the dropped one,
// until the client closes the connection, idles past IdleTimeout, or the
// server shuts down. Reading on keeps the client's close from going
// unnoticed; discarding keeps the connection's memory bounded.
func (s *Server) stallAfterDrop(ctx context.Context, d *deadlines, br *bufio.Reader, acct *account) {
	for {
		frame, pooled, err := s.readFrame(ctx, d, br, acct, s.maxFrame)
		if err != nil {
			return
		}
		if pooled {
			s.mem.bufs.put(frame)
		}
		acct.settle()
	}
}

// faultTarget is what a request names that a fault may match on.
type faultTarget struct {
	groups  []string
	members []string
	topics  []topicParts
}

// topicParts is one topic a request names, with the partitions it names
// (none for a request that names topics only, such as Metadata).
type topicParts struct {
	topic string
	parts []int32
}

func (at *faultTarget) group(g string)  { at.groups = append(at.groups, g) }
func (at *faultTarget) member(m string) { at.members = append(at.members, m) }
func (at *faultTarget) topic(t string)  { at.topics = append(at.topics, topicParts{topic: t}) }
func (at *faultTarget) parts(t string, ps ...int32) {
	at.topics = append(at.topics, topicParts{topic: t, parts: ps})
}

// partsOf lists the partition numbers of one topic of a request.
func partsOf[P any](ps []P, num func(*P) int32) []int32 {
	out := make([]int32, len(ps))
	for i := range ps {
		out[i] = num(&ps[i])
	}
	return out
}

// targetOf reads what req names: its groups, members, topics and
// partitions.
func targetOf(req kmsg.Request) *faultTarget {
	at := &faultTarget{}
	switch req := req.(type) {
	case *kmsg.ProduceRequest:
		for _, t := range req.Topics {
			at.parts(t.Topic, partsOf(t.Partitions, func(p *kmsg.ProduceRequestTopicPartition) int32 { return p.Partition })...)
		}
	case *kmsg.FetchRequest:
		for _, t := range req.Topics {
			at.parts(t.Topic, partsOf(t.Partitions, func(p *kmsg.FetchRequestTopicPartition) int32 { return p.Partition })...)
		}
	case *kmsg.ListOffsetsRequest:
		for _, t := range req.Topics {
			at.parts(t.Topic, partsOf(t.Partitions, func(p *kmsg.ListOffsetsRequestTopicPartition) int32 { return p.Partition })...)
		}
	case *kmsg.MetadataRequest:
		for _, t := range req.Topics {
			if t.Topic != nil {
				at.topic(*t.Topic)
			}
		}
	case *kmsg.CreateTopicsRequest:
		for _, t := range req.Topics {
			at.topic(t.Topic)
		}
	case *kmsg.OffsetCommitRequest:
		at.group(req.Group)
		at.member(req.MemberID)
		for _, t := range req.Topics {
			at.parts(t.Topic, partsOf(t.Partitions, func(p *kmsg.OffsetCommitRequestTopicPartition) int32 { return p.Partition })...)
		}
	case *kmsg.OffsetFetchRequest:
		if req.Version < 8 {
			at.group(req.Group)
			for _, t := range req.Topics {
				at.parts(t.Topic, t.Partitions...)
			}
		}
		for _, g := range req.Groups {
			at.group(g.Group)
			if g.MemberID != nil {
				at.member(*g.MemberID)
			}
			for _, t := range g.Topics {
				at.parts(t.Topic, t.Partitions...)
			}
		}
	case *kmsg.OffsetDeleteRequest:
		at.group(req.Group)
		for _, t := range req.Topics {
			at.parts(t.Topic, partsOf(t.Partitions, func(p *kmsg.OffsetDeleteRequestTopicPartition) int32 { return p.Partition })...)
		}
	case *kmsg.FindCoordinatorRequest:
		if req.CoordinatorType == 0 {
			if req.Version < 4 {
				at.group(req.CoordinatorKey)
			}
			at.groups = append(at.groups, req.CoordinatorKeys...)
		}
	case *kmsg.JoinGroupRequest:
		at.group(req.Group)
		at.member(req.MemberID)
	case *kmsg.SyncGroupRequest:
		at.group(req.Group)
		at.member(req.MemberID)
	case *kmsg.HeartbeatRequest:
		at.group(req.Group)
		at.member(req.MemberID)
	case *kmsg.LeaveGroupRequest:
		at.group(req.Group)
		if req.Version < 3 {
			at.member(req.MemberID)
		}
		for _, m := range req.Members {
			at.member(m.MemberID)
		}
	case *kmsg.ConsumerGroupHeartbeatRequest:
		at.group(req.Group)
		at.member(req.MemberID)
	case *kmsg.DescribeGroupsRequest:
		at.groups = append(at.groups, req.Groups...)
	case *kmsg.DeleteGroupsRequest:
		at.groups = append(at.groups, req.Groups...)
	case *kmsg.ConsumerGroupDescribeRequest:
		at.groups = append(at.groups, req.Groups...)
	}
	return at
}

// matches reports whether f applies to a request of key from clientID
// that names at.
func (f *Fault) matches(key kmsg.Key, clientID string, at *faultTarget) bool {
	switch {
	case len(f.Keys) > 0 && !slices.Contains(f.Keys, int16(key)),
		f.Err != 0 && !hasErrorCode(key),
		f.ClientID != "" && f.ClientID != clientID,
		f.Group != "" && !slices.Contains(at.groups, f.Group),
		f.Member != "" && !slices.Contains(at.members, f.Member):
		return false
	case f.Topic == "" && len(f.Partitions) == 0:
		return true
	}
	for _, t := range at.topics {
		if len(t.parts) == 0 && len(f.Partitions) == 0 && t.topic == f.Topic {
			return true
		}
		for _, p := range t.parts {
			if f.cuts(t.topic, p) {
				return true
			}
		}
	}
	return false
}

// cuts reports whether f's topic and partition filters match one
// partition.
func (f *Fault) cuts(topic string, partition int32) bool {
	return (f.Topic == "" || f.Topic == topic) && (len(f.Partitions) == 0 || slices.Contains(f.Partitions, partition))
}
