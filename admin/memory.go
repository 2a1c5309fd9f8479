package admin

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/minibroker/minibroker/server"
)

// WatchMemory adds the Kafka server's memory budget to the series, read
// from stats at every scrape, each with lane="frames" (request frames)
// and lane="work" (answers, records read, decompressors):
//
//	minibroker_memory_bytes{lane}               gauge
//	minibroker_memory_peak_bytes{lane}          gauge
//	minibroker_memory_max_bytes{lane}           gauge
//	minibroker_memory_waits_total{lane}         counter
//	minibroker_memory_wait_seconds_total{lane}  counter
//	minibroker_memory_refusals_total{lane}      counter
//	minibroker_memory_overdrawn_total{lane}     counter
func (m *Metrics) WatchMemory(stats func() server.MemoryStats) {
	m.registry.MustRegister(memoryCollector{stats: stats})
}

var (
	memoryBytesDesc = prometheus.NewDesc("minibroker_memory_bytes",
		"Bytes of the memory budget reserved now, by lane (frames: request frames being read or answered; work: answers, records read for a fetch, decompressors).",
		[]string{"lane"}, nil)
	memoryPeakDesc = prometheus.NewDesc("minibroker_memory_peak_bytes",
		"The most bytes of the memory budget reserved at once since start, by lane.",
		[]string{"lane"}, nil)
	memoryMaxDesc = prometheus.NewDesc("minibroker_memory_max_bytes",
		"The memory budget of each lane (--max-inflight-bytes).",
		[]string{"lane"}, nil)
	memoryWaitsDesc = prometheus.NewDesc("minibroker_memory_waits_total",
		"Reservations that waited for the memory budget, by lane.",
		[]string{"lane"}, nil)
	memoryWaitSecondsDesc = prometheus.NewDesc("minibroker_memory_wait_seconds_total",
		"Time reservations spent waiting for the memory budget, by lane.",
		[]string{"lane"}, nil)
	memoryRefusalsDesc = prometheus.NewDesc("minibroker_memory_refusals_total",
		"Reservations that did not get their bytes within the frame read timeout; each closed its connection.",
		[]string{"lane"}, nil)
	memoryOverdrawnDesc = prometheus.NewDesc("minibroker_memory_overdrawn_total",
		"Reservations taken past the lane's maximum, without waiting, by a connection that already held some.",
		[]string{"lane"}, nil)
)

// memoryCollector reports server.MemoryStats at each scrape.
type memoryCollector struct {
	stats func() server.MemoryStats
}

func (c memoryCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{memoryBytesDesc, memoryPeakDesc, memoryMaxDesc, memoryWaitsDesc,
		memoryWaitSecondsDesc, memoryRefusalsDesc, memoryOverdrawnDesc} {
		ch <- d
	}
}

func (c memoryCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.stats()
	for _, l := range []struct {
		name string
		st   server.LaneStats
	}{{"frames", st.Frames}, {"work", st.Work}} {
		gauge := func(d *prometheus.Desc, v float64) {
			ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, l.name)
		}
		counter := func(d *prometheus.Desc, v float64) {
			ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, l.name)
		}
		gauge(memoryBytesDesc, float64(l.st.InUse))
		gauge(memoryPeakDesc, float64(l.st.Peak))
		gauge(memoryMaxDesc, float64(l.st.Max))
		counter(memoryWaitsDesc, float64(l.st.Waits))
		counter(memoryWaitSecondsDesc, l.st.WaitTime.Seconds())
		counter(memoryRefusalsDesc, float64(l.st.Refusals))
		counter(memoryOverdrawnDesc, float64(l.st.Overdrawn))
	}
}
