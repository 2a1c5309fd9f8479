package admin

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/minibroker/minibroker/server"
)

// TestMemoryBudgetIsShown: the server's memory budget reaches the
// minibroker_memory_* series of both lanes, read at each scrape.
func TestMemoryBudgetIsShown(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	st := server.MemoryStats{
		Frames: server.LaneStats{Max: 128 << 20, InUse: 1 << 20, Peak: 16 << 20, Waits: 3, WaitTime: 1500 * time.Millisecond, Refusals: 1},
		Work:   server.LaneStats{Max: 128 << 20, InUse: 2 << 20, Peak: 40 << 20, Waits: 9, Overdrawn: 2},
	}
	f.rec.Metrics().WatchMemory(func() server.MemoryStats { return st })
	srv, err := New(Config{Coordinator: f.coord, Catalog: f.catalog, Recorder: f.rec, Clock: f.clock})
	require.NoError(t, err)
	fams := scrape(t, srv.Handler())
	require.Equal(t, float64(1<<20), value(fams, "minibroker_memory_bytes", "lane", "frames"))
	require.Equal(t, float64(2<<20), value(fams, "minibroker_memory_bytes", "lane", "work"))
	require.Equal(t, float64(16<<20), value(fams, "minibroker_memory_peak_bytes", "lane", "frames"))
	require.Equal(t, float64(128<<20), value(fams, "minibroker_memory_max_bytes", "lane", "work"))
	require.Equal(t, 3.0, value(fams, "minibroker_memory_waits_total", "lane", "frames"))
	require.Equal(t, 1.5, value(fams, "minibroker_memory_wait_seconds_total", "lane", "frames"))
	require.Equal(t, 1.0, value(fams, "minibroker_memory_refusals_total", "lane", "frames"))
	require.Equal(t, 2.0, value(fams, "minibroker_memory_overdrawn_total", "lane", "work"))

	st.Work.Refusals = 4
	require.Equal(t, 4.0, value(scrape(t, srv.Handler()), "minibroker_memory_refusals_total", "lane", "work"), "read at every scrape")
}
