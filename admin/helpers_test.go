package admin

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/require"

	"github.com/minibroker/minibroker/catalog"
	"github.com/minibroker/minibroker/clock"
	"github.com/minibroker/minibroker/coordinator"
	"github.com/minibroker/minibroker/internal/testutil"
	"github.com/minibroker/minibroker/offsets"
	"github.com/minibroker/minibroker/records"
	"github.com/minibroker/minibroker/server"
	"github.com/minibroker/minibroker/testkit/coretest"
	"github.com/minibroker/minibroker/topics"
)

// fixture is an admin Server over an in-process coordinator on a manual
// clock at Unix time 0, with its log recorded.
type fixture struct {
	clock   *clock.Manual
	coord   *coordinator.Coordinator
	catalog *catalog.Catalog
	log     *records.Log // the partition logs, in memory
	rec     *Recorder
	srv     *Server
	store   *offsets.Memory
	logs    *testutil.LogRecorder
	faults  *server.Faults // the registry behind /v1/faults
}

// fixtureOptions changes newFixture's defaults.
type fixtureOptions struct {
	realClock      bool // give the admin server a real clock (advance is 409)
	maxRebalances  int
	maxFencing     int
	maxGroupSeries int
	maxPositions   int
	maxPartitions  int
	token          string
	advertised     string // what Config.Advertised returns; "" leaves it nil
}

func newFixture(t *testing.T) *fixture { return newFixtureWith(t, fixtureOptions{}) }

func newFixtureWith(t *testing.T, opts fixtureOptions) *fixture {
	t.Helper()
	f := &fixture{clock: clock.NewManual(time.UnixMilli(0)), store: offsets.NewMemory(), logs: testutil.NewLogRecorder(t.Output(), slog.LevelWarn)}
	logger := f.logs.Logger()
	var clk coordinator.Clock = f.clock
	if opts.realClock {
		clk = nil
	}
	rec, err := NewRecorder(RecorderConfig{Clock: clk, MaxRebalances: opts.maxRebalances, MaxFencing: opts.maxFencing,
		MaxGroupSeries: opts.maxGroupSeries, MaxFetchPositions: opts.maxPositions})
	require.NoError(t, err)
	f.rec = rec
	core := coretest.New(t, coretest.Config{
		Topics: map[string]int32{"orders": 4, "payments": 1},
		Coordinator: coordinator.Config{
			Clock:          f.clock,
			Store:          f.store,
			Logger:         logger,
			OnRebalance:    rec.Rebalanced,
			OnGroupDeleted: rec.GroupDeleted,
		},
	})
	f.log, f.catalog, f.coord = core.Log, core.Catalog, core.Coordinator
	cat, coord := f.catalog, f.coord
	f.faults = server.NewFaults(logger, server.CoordinatorTargets(coord, cat))
	cfg := Config{Coordinator: coord, Catalog: cat, Recorder: rec, Clock: clk, Logger: logger, Token: opts.token,
		Log: f.log, MaxPartitionSeries: opts.maxPartitions, Faults: f.faults,
		Topics: &topics.Admin{Catalog: cat, Log: f.log, Coordinator: coord, Logger: logger}}
	if opts.advertised != "" {
		cfg.Advertised = func() string { return opts.advertised }
	}
	f.srv, err = New(cfg)
	require.NoError(t, err)
	return f
}

// produce appends n records, one batch, to a partition and waits until
// they are durable, so that the high watermark has moved past them. It
// returns the batch's size in bytes.
func (f *fixture) produce(t *testing.T, topic string, partition int32, n int) int {
	t.Helper()
	spec := records.BatchSpec{FirstTimestamp: 1}
	for range n {
		spec.Records = append(spec.Records, records.Record{Value: []byte("v")})
	}
	batch, err := f.log.Validate(records.EncodeBatch(spec))
	require.NoError(t, err)
	pending, err := f.log.Append(topic, partition, batch)
	require.NoError(t, err)
	_, err = pending.Wait()
	require.NoError(t, err)
	return batch.Size()
}

// join adds member to group through the coordinator, chapter style.
func (f *fixture) join(t *testing.T, group, member string, session time.Duration, topics ...string) coordinator.JoinResult {
	t.Helper()
	res, err := f.coord.Join(coordinator.JoinRequest{Group: group, MemberID: member, Topics: topics, SessionTimeout: session})
	require.NoError(t, err)
	return res
}

// do sends one request to the admin handler and returns the status and
// the body.
func (f *fixture) do(t *testing.T, method, path, body string) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	f.srv.Handler().ServeHTTP(rec, newRequest(method, path, body))
	return rec.Code, rec.Body.String()
}

// requireJSON checks that body is exactly want, written over several
// lines for reading, compacted, and followed by a newline.
func requireJSON(t *testing.T, want, body string) {
	t.Helper()
	var buf bytes.Buffer
	require.NoError(t, json.Compact(&buf, []byte(want)), "bad expectation")
	require.Equal(t, buf.String()+"\n", body)
}

// scrape parses the handler's /metrics answer.
func scrape(t *testing.T, h http.Handler) map[string]*dto.MetricFamily {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, newRequest("GET", "/metrics", ""))
	require.Equal(t, http.StatusOK, rec.Code)
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(rec.Body)
	require.NoError(t, err)
	return fams
}

// metric returns the series of family name whose labels are exactly
// labels ("k", "v" pairs), or nil.
func metric(fams map[string]*dto.MetricFamily, name string, labels ...string) *dto.Metric {
	fam := fams[name]
	if fam == nil {
		return nil
	}
	for _, m := range fam.GetMetric() {
		if len(m.GetLabel())*2 != len(labels) {
			continue
		}
		match := true
		for i, l := range m.GetLabel() {
			if l.GetName() != labels[2*i] || l.GetValue() != labels[2*i+1] {
				match = false
			}
		}
		if match {
			return m
		}
	}
	return nil
}

// value is the value of a counter or gauge series; -1 when absent.
func value(fams map[string]*dto.MetricFamily, name string, labels ...string) float64 {
	m := metric(fams, name, labels...)
	switch {
	case m == nil:
		return -1
	case m.Counter != nil:
		return m.GetCounter().GetValue()
	default:
		return m.GetGauge().GetValue()
	}
}

// newRequest is a request as a local client sends it: to a loopback Host,
// and, when it changes state, as JSON.
func newRequest(method, path, body string) *http.Request {
	r := httptest.NewRequest(method, path, strings.NewReader(body))
	r.Host = "127.0.0.1:19644"
	if method != http.MethodGet {
		r.Header.Set("Content-Type", "application/json")
	}
	return r
}
