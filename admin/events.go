package admin

// The Recorder: what the broker tells the admin side while it runs. It
// keeps the recent-event rings behind GET /v1/events and the page's
// generation timeline and fencing table (rebalances from
// coordinator.Config.OnRebalance, fencing rejections from
// server.Observer.Fenced) and feeds the Prometheus series. Each event gets
// a sequence number in arrival order and the coordinator clock's reading.
//
// The Recorder is built before the coordinator and the server, which
// report to it; the admin Server, built after them, reads it. So nothing
// needs a reference to something not yet built.

import (
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
	// GET /v1/events and the page show. Defaults 200 and 100.
	MaxRebalances int
	MaxFencing    int
}

// Defaults for RecorderConfig's zero fields.
const (
	DefaultMaxRebalances = 200
	DefaultMaxFencing    = 100
)

// Recorder collects the broker's events and metrics. It implements
// server.Observer, and its Rebalanced method is meant for
// coordinator.Config.OnRebalance. It is safe for concurrent use.
type Recorder struct {
	clock   coordinator.Clock
	metrics *Metrics

	mu         sync.Mutex
	seq        uint64               // guarded by mu; the last event sequence number
	rebalances ring[rebalanceEvent] // guarded by mu
	fencing    ring[fencingEvent]   // guarded by mu
	latest     map[string]int32     // guarded by mu; highest generation seen per group
}

var _ server.Observer = (*Recorder)(nil)

// NewRecorder returns a Recorder for cfg.
func NewRecorder(cfg RecorderConfig) (*Recorder, error) {
	if cfg.MaxRebalances < 0 || cfg.MaxFencing < 0 {
		return nil, errors.New("admin: ring sizes must not be negative")
	}
	r := &Recorder{
		clock:      cfg.Clock,
		metrics:    cfg.Metrics,
		rebalances: newRing[rebalanceEvent](cfg.MaxRebalances, DefaultMaxRebalances),
		fencing:    newRing[fencingEvent](cfg.MaxFencing, DefaultMaxFencing),
		latest:     make(map[string]int32),
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
}

// rebalanceEvent is one completed rebalance (coordinator.Rebalance).
type rebalanceEvent struct {
	Seq        uint64             `json:"seq"`
	Time       string             `json:"time"`
	TimeMS     int64              `json:"time_ms"`
	Group      string             `json:"group"`
	Generation int32              `json:"generation"`
	State      string             `json:"state"`   // Stable, or Empty when no member is left
	Members    []string           `json:"members"` // sorted
	Assignment []memberAssignment `json:"assignment"`
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
}

// Rebalanced records a rebalance in the timeline and updates the group's
// metrics. It is meant for coordinator.Config.OnRebalance. Calls may
// arrive out of order (the coordinator calls it after releasing its lock);
// the generation and member gauges follow the highest generation seen.
func (s *Recorder) Rebalanced(r coordinator.Rebalance) {
	ev := rebalanceEvent{
		Group:      r.Group,
		Generation: r.Generation,
		State:      r.State.String(),
		Members:    append([]string{}, r.Members...),
		Assignment: []memberAssignment{},
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
	s.metrics.rebalances.WithLabelValues(r.Group).Inc()
	// Gauges are set under mu so that two racing calls cannot leave an
	// older generation's values behind.
	if last, ok := s.latest[r.Group]; !ok || r.Generation > last {
		s.latest[r.Group] = r.Generation
		s.metrics.generation.WithLabelValues(r.Group).Set(float64(r.Generation))
		s.metrics.members.WithLabelValues(r.Group).Set(float64(len(r.Members)))
	}
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
	}
	ev.Time, ev.TimeMS = stamp(s.now())
	s.metrics.fencing.WithLabelValues(f.API, ev.Error).Inc()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	ev.Seq = s.seq
	s.fencing.push(ev)
}

// events returns the retained events, oldest first.
func (s *Recorder) events() eventsJSON {
	s.mu.Lock()
	defer s.mu.Unlock()
	return eventsJSON{Rebalances: s.rebalances.items(), Fencing: s.fencing.items()}
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
