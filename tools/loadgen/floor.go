package loadgen

import (
	"bufio"
	"context"
	"errors"
	"net"
	"strconv"
	"sync"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/protocol"
)

// ServeFloor serves the floor server on ln until ctx is done: the Kafka
// framing and nothing else. Each request is read with protocol.ReadFrame,
// ParseHeader and DecodeRequest, as minibroker reads it, and answered with
// a success response of its kind (req.ResponseKind()) with no coordinator
// behind it: joins succeed at once as the only member and leader, a
// SyncGroup hands the member the plan its leader sent, commits and fetches
// echo their partitions. Connections buffer their reads, reuse one frame
// buffer, and flush only when no request is left buffered, answering
// strictly in order. Whatever minibroker costs beyond this is the cost of
// the coordinator and of its own connection handling.
//
// For producers it is also the disk floor (diskfloor.go): ApiVersions,
// Metadata and InitProducerId answer as a one-broker cluster holding
// cfg's topic, and a Produce appends its batches to one file in cfg.Dir
// and fdatasyncs it once before it is answered.
func ServeFloor(ctx context.Context, ln net.Listener, cfg FloorConfig) error {
	fl, err := newFloor(cfg, ln.Addr())
	if err != nil {
		ln.Close()
		return err
	}
	return fl.serve(ctx, ln)
}

func (fl *floor) serve(ctx context.Context, ln net.Listener) error {
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()
	defer fl.close()
	var (
		mu    sync.Mutex
		conns = map[net.Conn]struct{}{}
		wg    sync.WaitGroup
	)
	for {
		c, err := ln.Accept()
		if err != nil {
			break
		}
		mu.Lock()
		conns[c] = struct{}{}
		mu.Unlock()
		wg.Go(func() {
			fl.serveConn(c)
			mu.Lock()
			delete(conns, c)
			mu.Unlock()
			c.Close()
		})
	}
	mu.Lock()
	for c := range conns {
		c.Close()
	}
	mu.Unlock()
	wg.Wait()
	if ctx.Err() != nil {
		return nil
	}
	return errors.New("loadgen: floor listener closed")
}

func (fl *floor) serveConn(c net.Conn) {
	br := bufio.NewReaderSize(c, 16<<10)
	bw := bufio.NewWriterSize(c, 16<<10)
	var buf, out []byte
	for {
		frame, err := protocol.ReadFrame(br, protocol.DefaultMaxFrameBytes, buf)
		if err != nil {
			return
		}
		if cap(frame) <= 1<<20 {
			buf = frame[:0]
		}
		h, body, err := protocol.ParseHeader(frame)
		if err != nil {
			return
		}
		req, err := protocol.DecodeRequest(h, body)
		var resp kmsg.Response
		switch {
		case err == nil:
			resp = fl.respond(req)
		case h.APIKey == int16(kmsg.ApiVersions):
			resp = protocol.UnsupportedAPIVersionsResponse()
		default:
			return
		}
		if resp != nil { // nil: a produce with acks 0
			out = protocol.AppendResponse(out[:0], h.CorrelationID, resp)
			if _, err := bw.Write(out); err != nil {
				return
			}
		}
		if br.Buffered() == 0 {
			if err := bw.Flush(); err != nil {
				return
			}
		}
	}
}

// respond answers req with success and no state but the disk floor's.
func (fl *floor) respond(req kmsg.Request) kmsg.Response {
	resp := req.ResponseKind()
	switch req := req.(type) {
	case *kmsg.ApiVersionsRequest:
		fl.apiVersions(resp.(*kmsg.ApiVersionsResponse))
	case *kmsg.MetadataRequest:
		fl.metadata(req, resp.(*kmsg.MetadataResponse))
	case *kmsg.InitProducerIDRequest:
		resp.(*kmsg.InitProducerIDResponse).ProducerID = fl.seq.Add(1)
	case *kmsg.ProduceRequest:
		return fl.produce(req, resp.(*kmsg.ProduceResponse))
	case *kmsg.JoinGroupRequest:
		r := resp.(*kmsg.JoinGroupResponse)
		r.MemberID = req.MemberID
		if r.MemberID == "" {
			r.MemberID = "floor-" + strconv.FormatInt(fl.seq.Add(1), 10)
		}
		r.Generation, r.LeaderID = 1, r.MemberID
		r.ProtocolType = &req.ProtocolType
		if len(req.Protocols) > 0 {
			r.Protocol = &req.Protocols[0].Name
			r.Members = []kmsg.JoinGroupResponseMember{{MemberID: r.MemberID, ProtocolMetadata: req.Protocols[0].Metadata}}
		}
	case *kmsg.SyncGroupRequest:
		r := resp.(*kmsg.SyncGroupResponse)
		r.ProtocolType, r.Protocol = req.ProtocolType, req.Protocol
		for _, a := range req.GroupAssignment {
			if a.MemberID == req.MemberID {
				r.MemberAssignment = a.MemberAssignment
			}
		}
	case *kmsg.LeaveGroupRequest:
		r := resp.(*kmsg.LeaveGroupResponse)
		for _, m := range req.Members {
			r.Members = append(r.Members, kmsg.LeaveGroupResponseMember{MemberID: m.MemberID})
		}
	case *kmsg.OffsetCommitRequest:
		r := resp.(*kmsg.OffsetCommitResponse)
		for _, t := range req.Topics {
			rt := kmsg.OffsetCommitResponseTopic{Topic: t.Topic}
			for _, p := range t.Partitions {
				rt.Partitions = append(rt.Partitions, kmsg.OffsetCommitResponseTopicPartition{Partition: p.Partition})
			}
			r.Topics = append(r.Topics, rt)
		}
	case *kmsg.OffsetFetchRequest:
		r := resp.(*kmsg.OffsetFetchResponse)
		for _, g := range req.Groups {
			rg := kmsg.OffsetFetchResponseGroup{Group: g.Group}
			for _, t := range g.Topics {
				rt := kmsg.OffsetFetchResponseGroupTopic{Topic: t.Topic}
				for _, p := range t.Partitions {
					rt.Partitions = append(rt.Partitions, kmsg.OffsetFetchResponseGroupTopicPartition{Partition: p, Offset: -1, LeaderEpoch: -1})
				}
				rg.Topics = append(rg.Topics, rt)
			}
			r.Groups = append(r.Groups, rg)
		}
	}
	return resp
}
