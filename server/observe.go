package server

// The observer hook: what the server tells an outside watcher (the admin
// API's metrics and live page) about requests, commits, connections and
// fencing rejections. The server calls it synchronously, before the
// response it concerns is written, so a client that has read a response
// can count on the observer having seen it.

import (
	"log/slog"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Observer watches the server. Its methods are called from connection
// goroutines, concurrently, and must not block. Config.Observer nil means
// nobody watches.
type Observer interface {
	// RequestDone is called once per answered request with the response's
	// error code (see ResponseErrorCode) and the time spent handling it.
	RequestDone(api, version, errorCode int16, elapsed time.Duration)
	// CommitDone is called once per OffsetCommit that reached the
	// coordinator, with the time until the commit was durable (or
	// rejected) and its error code.
	CommitDone(elapsed time.Duration, errorCode int16)
	// Fenced is called for every fencing rejection.
	Fenced(FencingEvent)
	// ConnOpened and ConnClosed bracket every accepted connection.
	ConnOpened()
	ConnClosed()
}

// FencingEvent is one fencing rejection: a JoinGroup, SyncGroup,
// Heartbeat, ConsumerGroupHeartbeat or OffsetCommit that the coordinator
// turned away with ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID,
// REBALANCE_IN_PROGRESS (which also covers the ownership check, docs/design.md
// section 4), FENCED_MEMBER_EPOCH or STALE_MEMBER_EPOCH (KIP-848).
type FencingEvent struct {
	Group    string
	MemberID string
	API      string // Kafka's request name, "OffsetCommit"
	// Generation is the generation the request carried, or the member
	// epoch of a ConsumerGroupHeartbeat or of a consumer-protocol
	// member's OffsetCommit; -1 for JoinGroup.
	Generation int32
	Code       int16
}

// nopObserver is the Observer of a server nobody watches.
type nopObserver struct{}

func (nopObserver) RequestDone(int16, int16, int16, time.Duration) {}
func (nopObserver) CommitDone(time.Duration, int16)                {}
func (nopObserver) Fenced(FencingEvent)                            {}
func (nopObserver) ConnOpened()                                    {}
func (nopObserver) ConnClosed()                                    {}

// isFencingCode reports whether code is one of the codes by which the
// coordinator fences a stale or unknown member.
func isFencingCode(code int16) bool {
	switch code {
	case kerr.IllegalGeneration.Code, kerr.UnknownMemberID.Code, kerr.RebalanceInProgress.Code,
		kerr.FencedMemberEpoch.Code, kerr.StaleMemberEpoch.Code:
		return true
	}
	return false
}

// fenced logs and reports a fencing rejection when code is one; any other
// code is ignored.
func (s *Server) fenced(logger *slog.Logger, api kmsg.Key, group, memberID string, generation int32, code int16) {
	if !isFencingCode(code) {
		return
	}
	logger.Info("fencing rejection", "group", group, "member", memberID, "api", api.Name(),
		"generation", generation, "code", CodeName(code))
	s.observer.Fenced(FencingEvent{Group: group, MemberID: memberID, API: api.Name(), Generation: generation, Code: code})
}

// CodeName returns Kafka's name for an error code: "NONE" for 0,
// "ILLEGAL_GENERATION" for 22.
func CodeName(code int16) string {
	if code == 0 {
		return "NONE"
	}
	if e, ok := kerr.ErrorForCode(code).(*kerr.Error); ok && e.Code == code {
		return e.Message
	}
	return "UNKNOWN_CODE"
}

// ResponseErrorCode returns the first non-zero error code of resp, top
// level first, then per topic, partition, group or member in order; 0
// when every code is NONE. It knows every response the server sends.
func ResponseErrorCode(resp kmsg.Response) int16 {
	switch r := resp.(type) {
	case *kmsg.ApiVersionsResponse:
		return r.ErrorCode
	case *kmsg.MetadataResponse:
		if r.ErrorCode != 0 {
			return r.ErrorCode
		}
		for _, t := range r.Topics {
			if t.ErrorCode != 0 {
				return t.ErrorCode
			}
			for _, p := range t.Partitions {
				if p.ErrorCode != 0 {
					return p.ErrorCode
				}
			}
		}
	case *kmsg.FindCoordinatorResponse:
		if r.ErrorCode != 0 {
			return r.ErrorCode
		}
		for _, c := range r.Coordinators {
			if c.ErrorCode != 0 {
				return c.ErrorCode
			}
		}
	case *kmsg.JoinGroupResponse:
		return r.ErrorCode
	case *kmsg.SyncGroupResponse:
		return r.ErrorCode
	case *kmsg.HeartbeatResponse:
		return r.ErrorCode
	case *kmsg.LeaveGroupResponse:
		if r.ErrorCode != 0 {
			return r.ErrorCode
		}
		for _, m := range r.Members {
			if m.ErrorCode != 0 {
				return m.ErrorCode
			}
		}
	case *kmsg.OffsetCommitResponse:
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				if p.ErrorCode != 0 {
					return p.ErrorCode
				}
			}
		}
	case *kmsg.OffsetFetchResponse:
		if r.ErrorCode != 0 {
			return r.ErrorCode
		}
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				if p.ErrorCode != 0 {
					return p.ErrorCode
				}
			}
		}
		for _, g := range r.Groups {
			if g.ErrorCode != 0 {
				return g.ErrorCode
			}
			for _, t := range g.Topics {
				for _, p := range t.Partitions {
					if p.ErrorCode != 0 {
						return p.ErrorCode
					}
				}
			}
		}
	case *kmsg.DescribeGroupsResponse:
		for _, g := range r.Groups {
			if g.ErrorCode != 0 {
				return g.ErrorCode
			}
		}
	case *kmsg.ListGroupsResponse:
		return r.ErrorCode
	case *kmsg.CreateTopicsResponse:
		for _, t := range r.Topics {
			if t.ErrorCode != 0 {
				return t.ErrorCode
			}
		}
	case *kmsg.ListOffsetsResponse:
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				if p.ErrorCode != 0 {
					return p.ErrorCode
				}
			}
		}
	case *kmsg.ConsumerGroupHeartbeatResponse:
		return r.ErrorCode
	case *kmsg.ConsumerGroupDescribeResponse:
		for _, g := range r.Groups {
			if g.ErrorCode != 0 {
				return g.ErrorCode
			}
		}
	case *kmsg.DeleteGroupsResponse:
		for _, g := range r.Groups {
			if g.ErrorCode != 0 {
				return g.ErrorCode
			}
		}
	case *kmsg.OffsetDeleteResponse:
		if r.ErrorCode != 0 {
			return r.ErrorCode
		}
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				if p.ErrorCode != 0 {
					return p.ErrorCode
				}
			}
		}
	case *kmsg.FetchResponse:
		if r.ErrorCode != 0 {
			return r.ErrorCode
		}
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				if p.ErrorCode != 0 {
					return p.ErrorCode
				}
			}
		}
	}
	return 0
}
