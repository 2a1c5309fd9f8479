package admin

import (
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"

	"github.com/minibroker/minibroker/offsets"
	"github.com/minibroker/minibroker/server"
)

// allFamilies is every family /metrics shows once each hook has fired.
var allFamilies = []string{
	"minibroker_commit_seconds",
	"minibroker_connections",
	"minibroker_connections_accepted_total",
	"minibroker_faults_live",
	"minibroker_fencing_rejections_total",
	"minibroker_fsync_seconds",
	"minibroker_group_generation",
	"minibroker_group_members",
	"minibroker_partition_log_end_offset",
	"minibroker_partitions",
	"minibroker_rebalances_total",
	"minibroker_request_duration_seconds",
	"minibroker_requests_total",
}

// TestMetricsAfterScriptedCalls fires each observer hook a known number
// of times and reads the values back from /metrics.
func TestMetricsAfterScriptedCalls(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.rec.ConnOpened("127.0.0.1:40000")
	f.rec.ConnOpened("127.0.0.1:40000")
	f.rec.ConnClosed("127.0.0.1:40000")
	f.rec.RequestDone(11, 9, 79, time.Millisecond) // JoinGroup, MEMBER_ID_REQUIRED
	f.rec.RequestDone(11, 9, 0, 2*time.Millisecond)
	f.rec.RequestDone(12, 4, 22, 3*time.Millisecond) // Heartbeat, ILLEGAL_GENERATION
	f.rec.CommitDone("app", 4*time.Millisecond, 0)
	f.rec.CommitDone("app", time.Hour, 22) // rejected: not timed
	f.join(t, "app", "a", time.Second, "orders")
	f.join(t, "app", "b", time.Second, "orders")
	f.coord.Leave("app", "a")
	f.rec.Fenced(server.FencingEvent{Group: "app", MemberID: "a", API: "Heartbeat", Generation: 1, Code: 22})

	fams := scrape(t, f.srv.Handler())
	var names []string
	for name := range fams {
		require.True(t, strings.HasPrefix(name, "minibroker_"), name)
		names = append(names, name)
	}
	slices.Sort(names)
	require.Equal(t, allFamilies, names)

	require.Equal(t, 1.0, value(fams, "minibroker_connections"))
	require.Equal(t, 2.0, value(fams, "minibroker_connections_accepted_total"))
	require.Equal(t, 1.0, value(fams, "minibroker_requests_total", "api", "JoinGroup", "error_code", "MEMBER_ID_REQUIRED"))
	require.Equal(t, 1.0, value(fams, "minibroker_requests_total", "api", "JoinGroup", "error_code", "NONE"))
	require.Equal(t, 1.0, value(fams, "minibroker_requests_total", "api", "Heartbeat", "error_code", "ILLEGAL_GENERATION"))
	require.Len(t, fams["minibroker_requests_total"].GetMetric(), 3)
	join := metric(fams, "minibroker_request_duration_seconds", "api", "JoinGroup").GetHistogram()
	require.Equal(t, uint64(2), join.GetSampleCount())
	require.InDelta(t, 0.003, join.GetSampleSum(), 1e-9)
	commits := metric(fams, "minibroker_commit_seconds").GetHistogram()
	require.Equal(t, uint64(1), commits.GetSampleCount())
	require.InDelta(t, 0.004, commits.GetSampleSum(), 1e-9)
	require.Equal(t, 3.0, value(fams, "minibroker_rebalances_total", "group", "app"))
	require.Equal(t, 3.0, value(fams, "minibroker_group_generation", "group", "app"))
	require.Equal(t, 1.0, value(fams, "minibroker_group_members", "group", "app"))
	require.Equal(t, 1.0, value(fams, "minibroker_fencing_rejections_total", "api", "Heartbeat", "error_code", "ILLEGAL_GENERATION"))
	require.Equal(t, uint64(0), metric(fams, "minibroker_fsync_seconds").GetHistogram().GetSampleCount())
}

// TestMetricsFsync: ObserveFsync feeds minibroker_fsync_seconds, and a
// file-backed offsets store calls it for every durable commit.
func TestMetricsFsync(t *testing.T) {
	t.Parallel()
	m := NewMetrics()
	m.ObserveFsync(2 * time.Millisecond)
	fsync := func() *dto.Histogram {
		fams, err := m.registry.Gather()
		require.NoError(t, err)
		for _, fam := range fams {
			if fam.GetName() == "minibroker_fsync_seconds" {
				return fam.GetMetric()[0].GetHistogram()
			}
		}
		t.Fatal("no minibroker_fsync_seconds")
		return nil
	}
	require.Equal(t, uint64(1), fsync().GetSampleCount())
	require.InDelta(t, 0.002, fsync().GetSampleSum(), 1e-9)

	store, err := offsets.Open(offsets.Config{Dir: t.TempDir(), ObserveSync: m.ObserveFsync})
	require.NoError(t, err)
	t.Cleanup(func() { store.Close() })
	require.NoError(t, store.Commit("g", []offsets.Entry{{Topic: "orders", Partition: 0, Offset: 1}}))
	require.Greater(t, fsync().GetSampleCount(), uint64(1), "a durable commit is timed through offsets.Config.ObserveSync")
}

// TestMetricsGroupSeriesGoWithTheirGroup: deleting a group removes its
// three series; other groups keep theirs.
func TestMetricsGroupSeriesGoWithTheirGroup(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.join(t, "gone", "a", time.Minute, "orders")
	f.coord.Leave("gone", "a")
	f.join(t, "kept", "b", time.Minute, "orders")
	fams := scrape(t, f.srv.Handler())
	require.Equal(t, 2.0, value(fams, "minibroker_rebalances_total", "group", "gone"))
	require.Equal(t, 2.0, value(fams, "minibroker_group_generation", "group", "gone"))
	require.Equal(t, 0.0, value(fams, "minibroker_group_members", "group", "gone"))

	require.Equal(t, []error{nil}, f.coord.DeleteGroups("gone"))
	fams = scrape(t, f.srv.Handler())
	for _, name := range []string{"minibroker_rebalances_total", "minibroker_group_generation", "minibroker_group_members"} {
		require.Equal(t, -1.0, value(fams, name, "group", "gone"), name)
		require.Len(t, fams[name].GetMetric(), 1, name)
		require.NotNil(t, metric(fams, name, "group", "kept"), name)
	}

	f.join(t, "gone", "c", time.Minute, "orders")
	fams = scrape(t, f.srv.Handler())
	require.Equal(t, 1.0, value(fams, "minibroker_rebalances_total", "group", "gone"), "a group made anew starts afresh")
	require.Equal(t, 1.0, value(fams, "minibroker_group_generation", "group", "gone"))
}

// TestMetricsGroupSeriesCap: at most MaxGroupSeries groups have series of
// their own; the rebalances of the rest add up under group="other",
// which has no gauges. A deleted group's place goes to the next group
// that rebalances. A group named "other" is counted there too.
func TestMetricsGroupSeriesCap(t *testing.T) {
	t.Parallel()
	f := newFixtureWith(t, fixtureOptions{maxGroupSeries: 2})
	f.join(t, "g1", "a", time.Minute, "orders")
	f.join(t, "g2", "a", time.Minute, "orders")
	f.join(t, "g3", "a", time.Minute, "orders")
	f.join(t, "g4", "a", time.Minute, "orders")
	f.join(t, "g4", "b", time.Minute, "orders")
	f.join(t, "other", "a", time.Minute, "orders")
	f.join(t, "g1", "b", time.Minute, "orders")
	fams := scrape(t, f.srv.Handler())
	require.Equal(t, 2.0, value(fams, "minibroker_rebalances_total", "group", "g1"))
	require.Equal(t, 1.0, value(fams, "minibroker_rebalances_total", "group", "g2"))
	require.Equal(t, 4.0, value(fams, "minibroker_rebalances_total", "group", "other"), "g3 once, g4 twice, other once")
	require.Len(t, fams["minibroker_rebalances_total"].GetMetric(), 3)
	for _, name := range []string{"minibroker_group_generation", "minibroker_group_members"} {
		require.Len(t, fams[name].GetMetric(), 2, name)
		require.Nil(t, metric(fams, name, "group", "other"), name)
		require.Nil(t, metric(fams, name, "group", "g3"), name)
	}
	require.Equal(t, 2.0, value(fams, "minibroker_group_generation", "group", "g1"))

	f.coord.Leave("g2", "a")
	require.Equal(t, []error{nil}, f.coord.DeleteGroups("g2"))
	f.join(t, "g3", "b", time.Minute, "orders")
	f.join(t, "g5", "a", time.Minute, "orders")
	fams = scrape(t, f.srv.Handler())
	require.Equal(t, -1.0, value(fams, "minibroker_rebalances_total", "group", "g2"))
	require.Equal(t, 1.0, value(fams, "minibroker_rebalances_total", "group", "g3"), "g3 took g2's place at its next rebalance")
	require.Equal(t, 2.0, value(fams, "minibroker_group_generation", "group", "g3"))
	require.Equal(t, 2.0, value(fams, "minibroker_group_members", "group", "g3"))
	require.Equal(t, 5.0, value(fams, "minibroker_rebalances_total", "group", "other"), "g5 is beyond the cap; the counter never goes down")
	require.Equal(t, -1.0, value(fams, "minibroker_rebalances_total", "group", "g5"))

	f.rec.GroupDeleted("other")
	f.rec.GroupDeleted("g5")
	fams = scrape(t, f.srv.Handler())
	require.Equal(t, 5.0, value(fams, "minibroker_rebalances_total", "group", "other"), "deleting a group counted there changes nothing")
}

// TestRecorderConfigMaxGroupSeries: a negative cap is refused; zero is
// the default, 500.
func TestRecorderConfigMaxGroupSeries(t *testing.T) {
	t.Parallel()
	_, err := NewRecorder(RecorderConfig{MaxGroupSeries: -1})
	require.ErrorContains(t, err, "MaxGroupSeries must not be negative")
	rec, err := NewRecorder(RecorderConfig{})
	require.NoError(t, err)
	require.Equal(t, DefaultMaxGroupSeries, rec.maxSeries)
	require.Equal(t, 500, DefaultMaxGroupSeries)
}
