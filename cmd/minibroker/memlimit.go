package main

import (
	"log/slog"
	"os"
	"runtime/debug"
	"runtime/metrics"
	"time"

	"github.com/minibroker/minibroker/server"
)

// The soft memory limit. The memory budget (--max-inflight-bytes) bounds
// the bytes requests and answers hold at once, but not the garbage they
// leave: with the collector's default pacing (GOGC=100) the heap may grow
// to twice what was live at the last collection, and a burst of large
// frames is live when it is measured. 100 connections sending 16 MiB
// frames at once took the broker to 280-400 MiB of resident memory with
// 128 MiB of frames in flight; under a soft memory limit of 280 MiB they
// took it to 274-288 MiB, with the same heartbeat latency beside them.
//
// So `minibroker serve` keeps the runtime's soft limit
// (runtime/debug.SetMemoryLimit) at twice the heap its state holds (what
// was live at the last collection, less what the budget holds now) plus
// the whole budget, both lanes, plus memLimitSlack for stacks and the
// runtime. The state keeps the collector's usual room to double between
// collections; the budget's bytes get their size and no more. A limit set
// in the environment (GOMEMLIMIT) wins: serve then leaves it alone. An
// embedded broker (package broker) never touches its host's limit.

const (
	// memLimitSlack is room beyond the heap: goroutine stacks, the
	// runtime's own structures, buffers between collections.
	memLimitSlack = 64 << 20
	// memLimitEvery is how often the limit follows the state. The state
	// grows by at most what a second of requests adds, and until the
	// limit follows, the collector runs sooner than it needs to, never
	// later.
	memLimitEvery = time.Second
)

// memLimitFor is the soft limit for a heap whose last collection found
// live bytes, while the budget holds inUse of its budget bytes.
func memLimitFor(live, inUse, budget int64) int64 {
	state := max(live-inUse, 0)
	return 2*state + budget + memLimitSlack
}

// heapLive reads what the last collection found live, and the goroutine
// stacks, which count against the limit too.
func heapLive(samples []metrics.Sample) int64 {
	metrics.Read(samples)
	var n int64
	for _, s := range samples {
		if s.Value.Kind() == metrics.KindUint64 {
			n += int64(s.Value.Uint64())
		}
	}
	return n
}

// governMemory keeps the soft memory limit at memLimitFor the broker's
// state and budget until stop is called, which restores the limit it
// found. It does nothing when GOMEMLIMIT is set.
func governMemory(budget func() server.MemoryStats, logger *slog.Logger) (stop func()) {
	if os.Getenv("GOMEMLIMIT") != "" {
		logger.Debug("soft memory limit left to GOMEMLIMIT", "limit", debug.SetMemoryLimit(-1))
		return func() {}
	}
	samples := []metrics.Sample{{Name: "/gc/heap/live:bytes"}, {Name: "/memory/classes/heap/stacks:bytes"}}
	limit := func() int64 {
		st := budget()
		return memLimitFor(heapLive(samples), st.Frames.InUse+st.Work.InUse, st.Frames.Max+st.Work.Max)
	}
	before := debug.SetMemoryLimit(limit())
	logger.Debug("soft memory limit set", "limit", debug.SetMemoryLimit(-1))
	done, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		tick := time.NewTicker(memLimitEvery)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				debug.SetMemoryLimit(limit())
			}
		}
	}()
	return func() {
		close(done)
		<-stopped
		debug.SetMemoryLimit(before)
	}
}
