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
// and, read at each scrape from the catalog, the log and the coordinator
// when the Server has a Log (stateCollector, below):
//
//	minibroker_partitions                                gauge
//	minibroker_partition_log_end_offset{topic,partition} gauge
//	minibroker_group_lag{group}                          gauge
//
// and, read from the fault registry when the Server has one (faults.go):
//
//	minibroker_faults_applied_total{action,api}          counter
//	minibroker_faults_live                               gauge
//
// error_code is Kafka's name for the code ("NONE", "ILLEGAL_GENERATION").
// The group series exist for at most RecorderConfig.MaxGroupSeries groups
// (500 by default) at a time and go when their group is deleted; the
// rebalances of groups beyond the cap are counted under group="other",
// which has no gauges (events.go). The log end is reported for at most
// Config.MaxPartitionSeries partitions (1000 by default), the first in
// topic and partition order; minibroker_partitions says how many there
// are.

import (
	"maps"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/offsets"
	"github.com/minibroker/minibroker/server"
)

// latencyBuckets span 50 us to about 1.6 s, doubling.
func latencyBuckets() []float64 { return prometheus.ExponentialBuckets(50e-6, 2, 16) }

// Metrics is the set of minibroker_* series and the registry that holds
// them. Build it with NewMetrics; it is safe for concurrent use.
type Metrics struct {
	registry *prometheus.Registry

	requests       *prometheus.CounterVec
	requestSeconds *prometheus.HistogramVec
	// requestCounts and requestTimes cache the series of requests and
	// requestSeconds by (API, code) and API: every answered request
	// touches both, and a label lookup hashes the label values (about
	// 110 ns a request for the two).
	requestCounts    sync.Map // requestKey → prometheus.Counter
	requestTimes     sync.Map // int16 API key → prometheus.Observer
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
	s.metrics.requestCount(api, errorCode).Inc()
	s.metrics.requestTime(api).Observe(elapsed.Seconds())
}

// requestKey names a series of minibroker_requests_total.
type requestKey struct{ api, code int16 }

// requestCount is the counter of requests to api answered with code.
func (m *Metrics) requestCount(api, code int16) prometheus.Counter {
	k := requestKey{api, code}
	if c, ok := m.requestCounts.Load(k); ok {
		return c.(prometheus.Counter)
	}
	c, _ := m.requestCounts.LoadOrStore(k, m.requests.WithLabelValues(kmsg.NameForKey(api), server.CodeName(code)))
	return c.(prometheus.Counter)
}

// requestTime is the latency histogram of requests to api.
func (m *Metrics) requestTime(api int16) prometheus.Observer {
	if o, ok := m.requestTimes.Load(api); ok {
		return o.(prometheus.Observer)
	}
	o, _ := m.requestTimes.LoadOrStore(api, m.requestSeconds.WithLabelValues(kmsg.NameForKey(api)))
	return o.(prometheus.Observer)
}

// CommitDone times a successful commit and records it as its group's
// latest activity (server.Observer). Rejected commits return before the
// store and would only blur the histogram; minibroker_requests_total
// counts them.
func (s *Recorder) CommitDone(group string, elapsed time.Duration, errorCode int16) {
	if errorCode == 0 {
		s.metrics.commitSeconds.Observe(elapsed.Seconds())
		s.committed(group)
	}
}

// ConnOpened counts an accepted connection and lists it among the open
// ones (server.Observer).
func (s *Recorder) ConnOpened(remote string) {
	s.metrics.connections.Inc()
	s.metrics.connectionsTotal.Inc()
	s.connOpened(remote)
}

// ConnClosed counts a closed connection and forgets it and its fetch
// positions (server.Observer).
func (s *Recorder) ConnClosed(remote string) {
	s.metrics.connections.Dec()
	s.forgetConn(remote)
	s.connClosed(remote)
}

// ObserveFsync times one journal append of the offsets store. It is meant
// for offsets.Config.ObserveSync, which calls it from the store's writer.
func (m *Metrics) ObserveFsync(d time.Duration) {
	m.fsyncSeconds.Observe(d.Seconds())
}

// The series stateCollector reports.
var (
	partitionsDesc = prometheus.NewDesc("minibroker_partitions",
		"Partitions in the topic catalog; minibroker_partition_log_end_offset reports only the first of them, up to the admin API's cap (1000 by default).",
		nil, nil)
	logEndDesc = prometheus.NewDesc("minibroker_partition_log_end_offset",
		"The partition's log end offset: its high watermark, the offset after the last record a consumer can read.",
		[]string{"topic", "partition"}, nil)
	lagDesc = prometheus.NewDesc("minibroker_group_lag",
		"The group's consumer lag: log end offset - committed offset, summed over the partitions it has committed (a commit past the log end counts negative, a reset sentinel -1 or -2 not at all); for the groups with per-group series.",
		[]string{"group"}, nil)
)

// stateCollector computes the log's and the groups' gauges at each scrape
// from what the catalog, the log and the coordinator hold then, so it
// keeps nothing of its own: a deleted group's lag goes with its place
// among the groups with series (Recorder.GroupDeleted).
type stateCollector struct {
	s             *Server
	maxPartitions int
}

func (c *stateCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- partitionsDesc
	ch <- logEndDesc
	ch <- lagDesc
}

func (c *stateCollector) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.MustNewConstMetric(partitionsDesc, prometheus.GaugeValue, float64(c.s.catalog.TotalPartitions()))
	n := 0
	for _, t := range c.s.catalog.List() { // sorted by name
		for p := range t.Partitions {
			if n >= c.maxPartitions {
				break
			}
			if st, ok := c.s.logOffsets(t.Name, p); ok {
				n++
				ch <- prometheus.MustNewConstMetric(logEndDesc, prometheus.GaugeValue, float64(st.HighWatermark), t.Name, strconv.Itoa(int(p)))
			}
		}
	}
	for _, g := range c.s.recorder.labelledGroups() {
		var lag int64
		known := false
		for _, e := range c.s.coord.Committed(g) {
			if offsets.IsResetSentinel(e.Offset) {
				continue // a reset policy, not a position
			}
			if st, ok := c.s.logOffsets(e.Topic, e.Partition); ok {
				lag += st.HighWatermark - e.Offset
				known = true
			}
		}
		if known {
			ch <- prometheus.MustNewConstMetric(lagDesc, prometheus.GaugeValue, float64(lag), g)
		}
	}
}

// labelledGroups returns the groups with series of their own, sorted.
func (s *Recorder) labelledGroups() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Sorted(maps.Keys(s.labelled))
}
