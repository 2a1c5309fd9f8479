package admin

// The Recorder: what the broker tells the admin side while it runs. It
// keeps the recent-event rings behind GET /v1/events and the page's
// generation timeline and fencing table (rebalances from
// coordinator.Config.OnRebalance, fencing rejections from
// server.Observer.Fenced), each group's latest activity (a rebalance, a
// fencing rejection or a commit: the page lists the most recently active
// groups first), the consumers' fetch positions (positions.go), and feeds
// the Prometheus series. Each event gets a sequence number in arrival
// order and the coordinator clock's reading.
//
// The Recorder is built before the coordinator and the server, which
// report to it; the admin Server, built after them, reads it. So nothing
// needs a reference to something not yet built.

import (
	"cmp"
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/minibroker/minibroker/clock"
	"github.com/minibroker/minibroker/coordinator"
	"github.com/minibroker/minibroker/server"
)

// RecorderConfig configures a Recorder. Zero fields mean the default.
type RecorderConfig struct {
	// Clock stamps events: the coordinator's clock. Default
	// clock.System{}.
	Clock coordinator.Clock
	// Metrics holds the Prometheus series. Default: NewMetrics().
	Metrics *Metrics
	// MaxRebalances and MaxFencing bound the recent-event rings that
	// GET /v1/events and the page show. Defaults 200 and 100. MaxFencing
	// also bounds the topic events (TopicNoticed).
	MaxRebalances int
	MaxFencing    int
	// MaxGroupSeries caps the groups with series of their own in the
	// per-group metrics (minibroker_rebalances_total,
	// minibroker_group_generation and minibroker_group_members, labelled
	// group). A group gets its series at a rebalance while fewer groups
	// than this have theirs, and keeps them until it is deleted
	// (GroupDeleted), which frees the place for another. The rebalances
	// of every group without series are counted together in
	// minibroker_rebalances_total{group="other"}; their generation and
	// member gauges are not reported, since a generation or a member count
	// summed over unrelated groups means nothing. A group actually named
	// "other" is always counted there. Default DefaultMaxGroupSeries.
	// minibroker_group_lag follows the same groups.
	MaxGroupSeries int
	// MaxFetchPositions bounds the fetch positions kept (one per
	// connection, client id and partition); past it the least recently
	// updated is dropped. Default DefaultMaxFetchPositions.
	MaxFetchPositions int
}

// Defaults for RecorderConfig's zero fields.
const (
	DefaultMaxRebalances = 200
	DefaultMaxFencing    = 100
	// DefaultMaxGroupSeries bounds /metrics at 2,000 per-group series
	// (four per group), however many groups come and go.
	DefaultMaxGroupSeries = 500
)

// maxActivityGroups bounds the groups whose latest activity the Recorder
// remembers, the least recently active forgotten first. Fencing
// rejections may name groups that do not exist, so the table is bounded
// by itself, not by the coordinator's --max-groups. A group forgotten
// has no known activity: the page lists it after the others.
const maxActivityGroups = 10_000

// OtherGroup is the group label the per-group series of groups beyond
// RecorderConfig.MaxGroupSeries share.
const OtherGroup = "other"

// Recorder collects the broker's events and metrics. It implements
// server.Observer, and its Rebalanced method is meant for
// coordinator.Config.OnRebalance. It is safe for concurrent use.
type Recorder struct {
	clock     coordinator.Clock
	metrics   *Metrics
	maxSeries int // RecorderConfig.MaxGroupSeries

	mu sync.Mutex
	// seq numbers everything the recorder hears of, in arrival order:
	// events and commits. Guarded by mu.
	seq        uint64
	rebalances ring[rebalanceEvent] // guarded by mu
	fencing    ring[fencingEvent]   // guarded by mu
	topics     ring[topicEvent]     // guarded by mu
	// labelled maps each group with series of its own to the highest
	// generation seen for it; at most maxSeries groups. Guarded by mu.
	labelled map[string]int32
	// activity is each group's latest rebalance, fencing rejection or
	// commit. Guarded by mu.
	activity *lru[string, activityJSON]

	// posMu guards fetches alone, so that the Fetch path never waits for
	// the events.
	posMu   sync.Mutex
	fetches *fetchTable

	// connMu guards conns alone: the open Kafka connections, by remote
	// address (connections.go).
	connMu sync.Mutex
	conns  map[string]*openConn
}

// activityJSON is a group's latest activity.
type activityJSON struct {
	Kind   string `json:"kind"` // "rebalance", "fencing" or "commit"
	Seq    uint64 `json:"seq"`
	Time   string `json:"time"`
	TimeMS int64  `json:"time_ms"`
}

var _ server.Observer = (*Recorder)(nil)

// NewRecorder returns a Recorder for cfg.
func NewRecorder(cfg RecorderConfig) (*Recorder, error) {
	if cfg.MaxRebalances < 0 || cfg.MaxFencing < 0 {
		return nil, errors.New("admin: ring sizes must not be negative")
	}
	if cfg.MaxGroupSeries < 0 {
		return nil, errors.New("admin: MaxGroupSeries must not be negative")
	}
	if cfg.MaxFetchPositions < 0 {
		return nil, errors.New("admin: MaxFetchPositions must not be negative")
	}
	r := &Recorder{
		clock:      cfg.Clock,
		metrics:    cfg.Metrics,
		rebalances: newRing[rebalanceEvent](cfg.MaxRebalances, DefaultMaxRebalances),
		fencing:    newRing[fencingEvent](cfg.MaxFencing, DefaultMaxFencing),
		topics:     newRing[topicEvent](cfg.MaxFencing, DefaultMaxFencing),
		labelled:   make(map[string]int32),
		maxSeries:  cfg.MaxGroupSeries,
		activity:   newLRU[string, activityJSON](maxActivityGroups),
		fetches:    newFetchTable(cmp.Or(cfg.MaxFetchPositions, DefaultMaxFetchPositions)),
		conns:      make(map[string]*openConn),
	}
	if r.maxSeries == 0 {
		r.maxSeries = DefaultMaxGroupSeries
	}
	if r.clock == nil {
		r.clock = clock.System{}
	}
	if r.metrics == nil {
		r.metrics = NewMetrics()
	}
	return r, nil
}

// Metrics returns the recorder's series.
func (s *Recorder) Metrics() *Metrics { return s.metrics }

func (s *Recorder) now() time.Time { return s.clock.Now() }

// eventsJSON answers GET /v1/events: the retained events, oldest first.
type eventsJSON struct {
	Rebalances []rebalanceEvent `json:"rebalances"`
	Fencing    []fencingEvent   `json:"fencing"`
	Topics     []topicEvent     `json:"topics"` // topics a client named that do not exist, or exist only since it named them
}

// rebalanceEvent is one completed rebalance (coordinator.Rebalance).
type rebalanceEvent struct {
	Seq        uint64             `json:"seq"`
	Time       string             `json:"time"`
	TimeMS     int64              `json:"time_ms"`
	Group      string             `json:"group"`
	Generation int32              `json:"generation"`
	Reason     string             `json:"reason"`  // why it started: coordinator.Reason, "join", "leave", "expiry", ...
	State      string             `json:"state"`   // Stable, or Empty when no member is left
	Members    []string           `json:"members"` // sorted
	Assignment []memberAssignment `json:"assignment"`
	// Replaced and ReplacedBy: a static member's restart (reason "static
	// member restarted"), which keeps the generation: the member id of
	// the previous run and the one that took its place.
	Replaced   string `json:"replaced,omitzero"`
	ReplacedBy string `json:"replaced_by,omitzero"`
}

// generationJSON is one entry of a group's generation history in GET
// /v1/groups: a generation and why it started, or a static member's
// restart at an unchanged generation.
type generationJSON struct {
	Generation int32  `json:"generation"`
	Reason     string `json:"reason"`
	Seq        uint64 `json:"seq"`
	Time       string `json:"time"`
	TimeMS     int64  `json:"time_ms"`
	Replaced   string `json:"replaced,omitzero"`
	ReplacedBy string `json:"replaced_by,omitzero"`
}

// memberAssignment is one member's share of a rebalance.
type memberAssignment struct {
	MemberID   string                `json:"member_id"`
	Partitions []topicPartitionsJSON `json:"partitions"`
}

// fencingEvent is one fencing rejection (server.FencingEvent).
type fencingEvent struct {
	Seq        uint64 `json:"seq"`
	Time       string `json:"time"`
	TimeMS     int64  `json:"time_ms"`
	Group      string `json:"group"`
	MemberID   string `json:"member_id"`
	API        string `json:"api"`
	Generation int32  `json:"generation"`
	Code       int16  `json:"code"`
	Error      string `json:"error"` // Kafka's name for Code
	// Reason says why in words: "stale generation", "not the owner",
	// "unknown member", "group rebalancing", "stale member epoch" or "replaced instance"
	// (server.FencingEvent).
	Reason string `json:"reason"`
}

// Rebalanced records a rebalance in the timeline and updates the group's
// metrics, or the "other" counter (RecorderConfig.MaxGroupSeries). It is
// meant for coordinator.Config.OnRebalance. Calls may arrive out of order
// (the coordinator calls it after releasing its lock); the generation and
// member gauges follow the highest generation seen. A static member's
// restart (coordinator.ReasonStaticRestart) goes into the timeline beside
// the generation it kept, and is no rebalance for the metrics.
func (s *Recorder) Rebalanced(r coordinator.Rebalance) {
	ev := rebalanceEvent{
		Group:      r.Group,
		Generation: r.Generation,
		Reason:     string(r.Reason),
		State:      r.State.String(),
		Members:    append([]string{}, r.Members...),
		Assignment: []memberAssignment{},
		Replaced:   r.Replaced,
		ReplacedBy: r.ReplacedBy,
	}
	ev.Time, ev.TimeMS = stamp(s.now())
	for _, id := range r.Members {
		ev.Assignment = append(ev.Assignment, memberAssignment{MemberID: id, Partitions: byTopic(r.Assignment[id])})
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	ev.Seq = s.seq
	s.rebalances.push(ev)
	s.activity.set(r.Group, activityJSON{Kind: "rebalance", Seq: ev.Seq, Time: ev.Time, TimeMS: ev.TimeMS})
	if r.Reason == coordinator.ReasonStaticRestart {
		return
	}
	last, labelled := s.labelled[r.Group]
	if !labelled && (len(s.labelled) >= s.maxSeries || r.Group == OtherGroup) {
		s.metrics.rebalances.WithLabelValues(OtherGroup).Inc()
		return
	}
	s.metrics.rebalances.WithLabelValues(r.Group).Inc()
	// Gauges are set under mu so that two racing calls cannot leave an
	// older generation's values behind.
	if !labelled || r.Generation > last {
		s.labelled[r.Group] = r.Generation
		s.metrics.generation.WithLabelValues(r.Group).Set(float64(r.Generation))
		s.metrics.members.WithLabelValues(r.Group).Set(float64(len(r.Members)))
	}
}

// GroupDeleted removes a deleted group's series and frees its place among
// the groups with series of their own. It is meant for
// coordinator.Config.OnGroupDeleted. A group counted under "other" leaves
// that counter as it is: a counter never goes down. A rebalance of the
// group reported after its deletion (the two hooks are called without
// the coordinator's lock, so they may cross) gives it series again, until
// it is deleted again.
func (s *Recorder) GroupDeleted(group string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.activity.delete(group)
	if _, ok := s.labelled[group]; !ok {
		return
	}
	delete(s.labelled, group)
	s.metrics.rebalances.DeleteLabelValues(group)
	s.metrics.generation.DeleteLabelValues(group)
	s.metrics.members.DeleteLabelValues(group)
}

// Fenced records a fencing rejection (server.Observer).
func (s *Recorder) Fenced(f server.FencingEvent) {
	ev := fencingEvent{
		Group:      f.Group,
		MemberID:   f.MemberID,
		API:        f.API,
		Generation: f.Generation,
		Code:       f.Code,
		Error:      server.CodeName(f.Code),
		Reason:     f.Reason,
	}
	ev.Time, ev.TimeMS = stamp(s.now())
	s.metrics.fencing.WithLabelValues(f.API, ev.Error).Inc()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	ev.Seq = s.seq
	s.fencing.push(ev)
	s.activity.set(f.Group, activityJSON{Kind: "fencing", Seq: ev.Seq, Time: ev.Time, TimeMS: ev.TimeMS})
}

// committed records a group's successful commit as its latest activity.
func (s *Recorder) committed(group string) {
	a := activityJSON{Kind: "commit"}
	a.Time, a.TimeMS = stamp(s.now())
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	a.Seq = s.seq
	s.activity.set(group, a)
}

// lastActivity returns group's latest activity, or nil if none is known.
func (s *Recorder) lastActivity(group string) *activityJSON {
	s.mu.Lock()
	defer s.mu.Unlock()
	if a, ok := s.activity.get(group); ok {
		return &a
	}
	return nil
}

// generations returns group's retained rebalances, oldest first: the
// reason of every generation the timeline still holds.
func (s *Recorder) generations(group string) []generationJSON {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := []generationJSON{}
	for _, ev := range s.rebalances.items() {
		if ev.Group == group {
			out = append(out, generationJSON{Generation: ev.Generation, Reason: ev.Reason, Seq: ev.Seq, Time: ev.Time, TimeMS: ev.TimeMS,
				Replaced: ev.Replaced, ReplacedBy: ev.ReplacedBy})
		}
	}
	return out
}

// events returns the retained events, oldest first.
func (s *Recorder) events() eventsJSON {
	s.mu.Lock()
	defer s.mu.Unlock()
	return eventsJSON{Rebalances: s.rebalances.items(), Fencing: s.fencing.items(), Topics: s.topics.items()}
}

func (s *Server) handleEvents(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, s.recorder.events())
}

// ring keeps the last max items pushed. It is not safe for concurrent use;
// its owner guards it.
type ring[T any] struct {
	max  int
	buf  []T // len(buf) <= max; oldest at next once full
	next int // where the next push goes once buf is full
}

// newRing returns a ring of size n, or def when n is zero.
func newRing[T any](n, def int) ring[T] {
	if n == 0 {
		n = def
	}
	return ring[T]{max: n}
}

func (r *ring[T]) push(v T) {
	if r.max <= 0 {
		return
	}
	if len(r.buf) < r.max {
		r.buf = append(r.buf, v)
		return
	}
	r.buf[r.next] = v
	r.next = (r.next + 1) % r.max
}

// items returns a copy of the ring's contents, oldest first, never nil.
func (r *ring[T]) items() []T {
	out := make([]T, 0, len(r.buf))
	out = append(out, r.buf[r.next:]...)
	return append(out, r.buf[:r.next]...)
}
