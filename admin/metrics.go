package admin

// Prometheus metrics. Every series is named minibroker_* and lives in the
// Metrics' own registry (no global registry, no Go runtime collectors), so
// GET /metrics shows exactly what this file declares:
//
//	minibroker_requests_total{api,error_code}            counter
//	minibroker_request_duration_seconds{api}             histogram
//	minibroker_rebalances_total{group}                   counter
//	minibroker_group_generation{group}                   gauge
//	minibroker_group_members{group}                      gauge
//	minibroker_fencing_rejections_total{api,error_code}  counter
//	minibroker_commit_seconds                            histogram
//	minibroker_fsync_seconds                             histogram
//	minibroker_connections                               gauge
//	minibroker_connections_accepted_total                counter
//
// error_code is Kafka's name for the code ("NONE", "ILLEGAL_GENERATION").
// The group series exist for at most RecorderConfig.MaxGroupSeries groups
// (500 by default) at a time and go when their group is deleted; the
// rebalances of groups beyond the cap are counted under group="other",
// which has no gauges (events.go).

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/server"
)

// latencyBuckets span 50 us to about 1.6 s, doubling.
func latencyBuckets() []float64 { return prometheus.ExponentialBuckets(50e-6, 2, 16) }

// Metrics is the set of minibroker_* series and the registry that holds
// them. Build it with NewMetrics; it is safe for concurrent use.
type Metrics struct {
	registry *prometheus.Registry

	requests         *prometheus.CounterVec
	requestSeconds   *prometheus.HistogramVec
	rebalances       *prometheus.CounterVec
	generation       *prometheus.GaugeVec
	members          *prometheus.GaugeVec
	fencing          *prometheus.CounterVec
	commitSeconds    prometheus.Histogram
	fsyncSeconds     prometheus.Histogram
	connections      prometheus.Gauge
	connectionsTotal prometheus.Counter
}

// NewMetrics returns the series, registered in a new registry.
func NewMetrics() *Metrics {
	m := &Metrics{
		registry: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "minibroker_requests_total",
			Help: "Kafka requests answered, by API and the response's first non-zero error code (NONE when all are zero).",
		}, []string{"api", "error_code"}),
		requestSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "minibroker_request_duration_seconds",
			Help:    "Time from a request's decoding to its response, by API (a Fetch includes its wait).",
			Buckets: latencyBuckets(),
		}, []string{"api"}),
		rebalances: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "minibroker_rebalances_total",
			Help: "Completed rebalances (new generations), by group; groups beyond the per-group series cap are counted under group=\"other\".",
		}, []string{"group"}),
		generation: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "minibroker_group_generation",
			Help: "The group's current generation, as of its latest rebalance (not reported for groups beyond the per-group series cap).",
		}, []string{"group"}),
		members: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "minibroker_group_members",
			Help: "The group's member count, as of its latest rebalance (not reported for groups beyond the per-group series cap).",
		}, []string{"group"}),
		fencing: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "minibroker_fencing_rejections_total",
			Help: "JoinGroup, SyncGroup, Heartbeat and OffsetCommit requests fenced with ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID or REBALANCE_IN_PROGRESS.",
		}, []string{"api", "error_code"}),
		commitSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "minibroker_commit_seconds",
			Help:    "Latency of successful offset commits, from validation to the store's durable acknowledgement (fsync included).",
			Buckets: latencyBuckets(),
		}),
		fsyncSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "minibroker_fsync_seconds",
			Help:    "Latency of the offsets journal's appends: the write and fsync of one record (one batch of commits), as offsets.Config.ObserveSync reports them.",
			Buckets: latencyBuckets(),
		}),
		connections: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "minibroker_connections",
			Help: "Open Kafka client connections.",
		}),
		connectionsTotal: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "minibroker_connections_accepted_total",
			Help: "Kafka client connections accepted since start.",
		}),
	}
	m.registry.MustRegister(m.requests, m.requestSeconds, m.rebalances, m.generation, m.members,
		m.fencing, m.commitSeconds, m.fsyncSeconds, m.connections, m.connectionsTotal)
	return m
}

// RequestDone counts an answered request (server.Observer).
func (s *Recorder) RequestDone(api, _, errorCode int16, elapsed time.Duration) {
	name := kmsg.NameForKey(api)
	s.metrics.requests.WithLabelValues(name, server.CodeName(errorCode)).Inc()
	s.metrics.requestSeconds.WithLabelValues(name).Observe(elapsed.Seconds())
}

// CommitDone times a successful commit (server.Observer). Rejected
// commits return before the store and would only blur the histogram;
// minibroker_requests_total counts them.
func (s *Recorder) CommitDone(elapsed time.Duration, errorCode int16) {
	if errorCode == 0 {
		s.metrics.commitSeconds.Observe(elapsed.Seconds())
	}
}

// ConnOpened counts an accepted connection (server.Observer).
func (s *Recorder) ConnOpened() {
	s.metrics.connections.Inc()
	s.metrics.connectionsTotal.Inc()
}

// ConnClosed counts a closed connection (server.Observer).
func (s *Recorder) ConnClosed() { s.metrics.connections.Dec() }

// ObserveFsync times one journal append of the offsets store. It is meant
// for offsets.Config.ObserveSync, which calls it from the store's writer.
func (m *Metrics) ObserveFsync(d time.Duration) {
	m.fsyncSeconds.Observe(d.Seconds())
}
