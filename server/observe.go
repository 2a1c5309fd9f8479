package server

// The observer hook: what the server tells an outside watcher (the admin
// API's metrics and live page) about requests, commits, fetches,
// connections and fencing rejections. The server calls it synchronously,
// before the response it concerns is written, so a client that has read a
// response can count on the observer having seen it.

import (
	"log/slog"
	"time"

	"github.com/minibroker/minibroker/coordinator"
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
	// coordinator, with its group, the time until the commit was durable
	// (or rejected) and its error code.
	CommitDone(group string, elapsed time.Duration, errorCode int16)
	// Fenced is called for every fencing rejection.
	Fenced(FencingEvent)
	// Fetched is called once for each partition of a Fetch request that
	// names a partition the broker has, before the fetch reads or waits:
	// where the connection's client asked to read. It is on the Fetch
	// path, so it must be cheap.
	Fetched(FetchEvent)
	// ConnOpened and ConnClosed bracket every accepted connection, named
	// by its remote address ("127.0.0.1:54321"). ConnClosed comes after
	// the connection's last request and, unless shutdown closed the
	// connection first, before the server closes its socket, so that its
	// address cannot yet belong to another connection.
	ConnOpened(remote string)
	ConnClosed(remote string)
	// TopicNoticed is called when a client names a topic it may not have
	// meant (TopicEvent): rate-limited as the log lines are.
	TopicNoticed(TopicEvent)
	// ConnIdentified is called when what is known of a connection
	// changes: its first request that names a client id (and any later
	// one naming another), and its SASL authentication. It comes between
	// ConnOpened and ConnClosed, with everything known so far.
	ConnIdentified(ConnInfo)
}

// The kinds of TopicEvent.
const (
	// TopicMissing: a Metadata request asked for a topic that does not
	// exist and did not create it; a consumer of it waits, silently on its
	// side, until it is created.
	TopicMissing = "missing"
	// TopicJoinRefused: a JoinGroup subscribed to a topic that does not
	// exist, which the chapter's join refuses.
	TopicJoinRefused = "join refused"
	// TopicAutoCreated: a Metadata request named a topic that did not
	// exist and the broker created it (--auto-create-topics): a typo in a
	// producer's topic makes a topic.
	TopicAutoCreated = "auto-created"
)

// TopicEvent is a client naming a topic it may not have meant: one that
// does not exist, or one that exists only because the client named it.
// Each kind is reported at most once a minute per topic (per group and
// topic for a refused join), as it is logged.
type TopicEvent struct {
	Kind       string // TopicMissing, TopicJoinRefused or TopicAutoCreated
	Topic      string
	ClientID   string
	Host       string // "/127.0.0.1"
	Group      string // TopicJoinRefused only
	Partitions int32  // TopicAutoCreated only
}

// ConnInfo is who a connection is: its remote address, the client id its
// requests name and, with SASL on, the user it authenticated as and the
// mechanism (empty before, or with SASL off).
type ConnInfo struct {
	Remote    string // "127.0.0.1:54321"
	ClientID  string
	User      string
	Mechanism string // "PLAIN", "SCRAM-SHA-256" or "SCRAM-SHA-512"
	TLS       bool
}

// started is when a timed step begins, for the observer: the zero time
// when none was configured, which spares every request its clock reads.
func (s *Server) started() time.Time {
	if !s.timed {
		return time.Time{}
	}
	return time.Now()
}

// took is the time since start, a value of started: zero when untimed.
func (s *Server) took(start time.Time) time.Duration {
	if start.IsZero() {
		return 0
	}
	return time.Since(start)
}

// identified tells the observer who from is now.
func (s *Server) identified(from *peer) {
	info := ConnInfo{Remote: from.remote, ClientID: from.clientID, TLS: s.tls != nil}
	if from.sasl.stage == saslDone {
		info.User, info.Mechanism = from.sasl.user, from.sasl.mechanism
	}
	s.observer.ConnIdentified(info)
}

// FetchEvent is one partition of a Fetch request: which connection asked
// for which offset. Kafka's Fetch names no group and no member, and a
// consumer fetches on a connection of its own, not the one it heartbeats
// on; so the event names the connection, by its remote address, host and
// client id, and a watcher that wants the member must infer it
// (docs/design.md section 10). The server has no clock of its own (the
// coordinator's is the broker's clock): the observer stamps the event
// with its own, as it does fencing events.
type FetchEvent struct {
	Remote      string // the connection's remote address, "127.0.0.1:54321"
	Host        string // the client's host as Kafka reports it, "/127.0.0.1", like MemberView.ClientHost
	ClientID    string // the request header's client id
	Topic       string
	Partition   int32
	FetchOffset int64 // the offset the client asked to read from
}

// FencingEvent is one fencing rejection: a JoinGroup, SyncGroup,
// Heartbeat, ConsumerGroupHeartbeat or OffsetCommit that the coordinator
// turned away with ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID,
// REBALANCE_IN_PROGRESS (which also covers the ownership check, docs/design.md
// section 4), FENCED_MEMBER_EPOCH or STALE_MEMBER_EPOCH (KIP-848), or
// FENCED_INSTANCE_ID (a static member's replaced incarnation; a LeaveGroup
// too).
type FencingEvent struct {
	Group    string
	MemberID string
	API      string // Kafka's request name, "OffsetCommit"
	// Generation is the generation the request carried, or the member
	// epoch of a ConsumerGroupHeartbeat or of a consumer-protocol
	// member's OffsetCommit; -1 for JoinGroup.
	Generation int32
	Code       int16
	// Reason says why, in words (coordinator.FencingReason): "stale
	// generation", "unknown member", "not the owner", "group
	// rebalancing", "stale member epoch" or "replaced instance".
	Reason string
}

// nopObserver is the Observer of a server nobody watches.
type nopObserver struct{}

func (nopObserver) RequestDone(int16, int16, int16, time.Duration) {}
func (nopObserver) CommitDone(string, time.Duration, int16)        {}
func (nopObserver) Fenced(FencingEvent)                            {}
func (nopObserver) Fetched(FetchEvent)                             {}
func (nopObserver) ConnOpened(string)                              {}
func (nopObserver) ConnClosed(string)                              {}
func (nopObserver) TopicNoticed(TopicEvent)                        {}
func (nopObserver) ConnIdentified(ConnInfo)                        {}

// fenced logs and reports a fencing rejection when err is one; any other
// error, or none, is ignored.
func (s *Server) fenced(logger *slog.Logger, api kmsg.Key, group, memberID string, generation int32, err error) {
	reason := coordinator.FencingReason(err)
	if reason == "" {
		return
	}
	code := s.code(err)
	logger.Info("fencing rejection", "group", group, "member", memberID, "api", api.Name(),
		"generation", generation, "code", CodeName(code), "reason", reason)
	s.observer.Fenced(FencingEvent{Group: group, MemberID: memberID, API: api.Name(), Generation: generation, Code: code, Reason: reason})
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
