package loadgen

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Codes counts Kafka error codes; zero (NONE) is not counted. It is safe
// for concurrent use.
type Codes struct {
	mu sync.Mutex
	m  map[int16]int64 // guarded by mu
}

// Add counts code unless it is zero.
func (c *Codes) Add(code int16) {
	if code == 0 {
		return
	}
	c.mu.Lock()
	if c.m == nil {
		c.m = map[int16]int64{}
	}
	c.m[code]++
	c.mu.Unlock()
}

// Map returns a copy of the counts.
func (c *Codes) Map() map[int16]int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.m)
}

// FormatCodes renders counts as "NAME=n NAME=n", sorted by name; "-" when
// there are none.
func FormatCodes(m map[int16]int64) string {
	if len(m) == 0 {
		return "-"
	}
	parts := make([]string, 0, len(m))
	for code, n := range m {
		name := fmt.Sprintf("code%d", code)
		if e := kerr.ErrorForCode(code); e != nil {
			if ke, ok := e.(*kerr.Error); ok {
				name = ke.Message
			}
		}
		parts = append(parts, fmt.Sprintf("%s=%d", name, n))
	}
	slices.Sort(parts)
	return strings.Join(parts, " ")
}

// Result is what one scenario measured against one server.
type Result struct {
	Scenario string
	Target   string
	// Ops is the number of completed operations in the measured window:
	// requests, or rebalances for Churn, or joined members for Members.
	Ops int64
	// Requests is every request answered in the window.
	Requests int64
	// Bytes is the record value bytes the Ops carried (records kinds).
	Bytes   int64
	Elapsed time.Duration
	// Latency is per request, per join cycle for Churn (first JoinGroup
	// to successful SyncGroup), per join for Members.
	Latency *Histogram
	// Codes counts every non-zero error code answered, warmup and drain
	// included; Unexpected is the part the scenario does not expect.
	Codes      map[int16]int64
	Unexpected map[int16]int64
	// SetupCodes counts the codes answered while members were set up.
	SetupCodes map[int16]int64
	// ServerCPU is the server process's CPU time (user + system) in the
	// window; zero when the target has no probe.
	ServerCPU time.Duration
	// Cycles counts completed leave/join/sync cycles (Churn).
	Cycles int64
	// Members and RSS: how many members were joined and the server's
	// resident set afterwards (Members); RSSBefore before the joins.
	Members   int64
	RSS       int64
	RSSBefore int64
	// WindowRates holds each window's rate when windows were merged.
	WindowRates []float64
	// Err is set when the run could not complete.
	Err error
}

// Rate returns operations per second.
func (r *Result) Rate() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Ops) / r.Elapsed.Seconds()
}

// RequestRate returns requests per second.
func (r *Result) RequestRate() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Requests) / r.Elapsed.Seconds()
}

// CPUPerOp returns the server's CPU time per operation; 0 when unknown.
func (r *Result) CPUPerOp() time.Duration {
	if r.Ops == 0 || r.ServerCPU == 0 {
		return 0
	}
	return r.ServerCPU / time.Duration(r.Ops)
}

// CPUPerRequest returns the server's CPU time per request answered; 0
// when unknown.
func (r *Result) CPUPerRequest() time.Duration {
	if r.Requests == 0 || r.ServerCPU == 0 {
		return 0
	}
	return r.ServerCPU / time.Duration(r.Requests)
}

// MBPerSec returns record value megabytes (10^6 bytes) per second at the
// median window's rate.
func (r *Result) MBPerSec() float64 {
	if r.Ops == 0 {
		return 0
	}
	return r.MedianRate() * float64(r.Bytes) / float64(r.Ops) / 1e6
}

// CPUPerMB returns the server's CPU time per megabyte (10^6 bytes) of
// record values; 0 when unknown.
func (r *Result) CPUPerMB() time.Duration {
	if r.Bytes == 0 || r.ServerCPU == 0 {
		return 0
	}
	return time.Duration(float64(r.ServerCPU) / (float64(r.Bytes) / 1e6))
}

// BytesPerMember returns the server's resident-set growth per member.
func (r *Result) BytesPerMember() float64 {
	if r.Members == 0 || r.RSS == 0 {
		return 0
	}
	return float64(r.RSS-r.RSSBefore) / float64(r.Members)
}

// Merge combines the windows of one scenario on one server: counts, CPU
// and histograms add up, and the rate becomes the median of the windows'
// rates, which a burst of load from outside the run moves less than the
// mean.
func Merge(windows ...*Result) *Result {
	if len(windows) == 0 {
		return &Result{Latency: NewHistogram()}
	}
	out := &Result{Scenario: windows[0].Scenario, Target: windows[0].Target, Latency: NewHistogram(), SetupCodes: windows[0].SetupCodes}
	for _, w := range windows {
		out.Ops += w.Ops
		out.Requests += w.Requests
		out.Bytes += w.Bytes
		out.Elapsed += w.Elapsed
		out.Latency.Merge(w.Latency)
		out.Codes = addCodes(out.Codes, w.Codes)
		out.Unexpected = addCodes(out.Unexpected, w.Unexpected)
		out.ServerCPU += w.ServerCPU
		out.Cycles += w.Cycles
		out.Members += w.Members
		out.RSS, out.RSSBefore = max(out.RSS, w.RSS), w.RSSBefore
		if w.Err != nil && out.Err == nil {
			out.Err = w.Err
		}
		out.WindowRates = append(out.WindowRates, w.Rate())
	}
	return out
}

// MedianRate returns the median of the windows' rates, or Rate for a
// single window.
func (r *Result) MedianRate() float64 {
	if len(r.WindowRates) < 2 {
		return r.Rate()
	}
	rates := slices.Clone(r.WindowRates)
	slices.Sort(rates)
	if n := len(rates); n%2 == 0 {
		return (rates[n/2-1] + rates[n/2]) / 2
	}
	return rates[len(rates)/2]
}
