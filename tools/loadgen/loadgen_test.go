package loadgen

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// startServers starts minibroker (durable, in a temp dir), the floor and
// kfake in this process, and stops them when the test ends.
func startServers(t *testing.T, partitions int32) map[string]*Server {
	t.Helper()
	mb, err := StartMinibroker(t.TempDir(), map[string]int32{"bench": partitions})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, mb.Stop()) })
	floor, err := StartFloor("127.0.0.1:0", FloorConfig{Dir: t.TempDir(), Partitions: partitions})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, floor.Stop()) })
	kf, err := StartKfake(KfakeConfig{Topic: "bench", Partitions: partitions})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, kf.Stop()) })
	return map[string]*Server{"minibroker": mb, "floor": floor, "kfake": kf}
}

// TestScenariosRunClean runs every kind of scenario briefly against each
// server: no unexpected error code, no failure, a non-zero rate.
// runUntilAcknowledged runs sc on target; a window too short for a single
// acknowledgement on a busy machine (a producer's first batch still in
// flight when it ends) is run again twice as long, up to a deadline, so
// the test asserts what a scenario does, not how fast the machine is.
func runUntilAcknowledged(t *testing.T, target Target, sc Scenario) *Result {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		r := Run(context.Background(), target, sc)
		if r.Err != nil || r.Requests > 0 || time.Now().After(deadline) {
			return r
		}
		t.Logf("%s on %s: nothing acknowledged in %v; again with %v", sc.Name, target.Name, sc.Duration, 2*sc.Duration)
		sc.Duration *= 2
	}
}

func TestScenariosRunClean(t *testing.T) {
	servers := startServers(t, 8)
	short := func(sc Scenario) Scenario {
		sc.Warmup, sc.Duration = 50*time.Millisecond, 200*time.Millisecond
		return sc
	}
	scenarios := []Scenario{
		short(Scenario{Name: "heartbeat", Kind: Heartbeat, Conns: 4, Groups: 4, Partitions: 8}),
		short(Scenario{Name: "heartbeat-pipelined", Kind: Heartbeat, Conns: 2, Groups: 2, Partitions: 8, InFlight: 8}),
		short(Scenario{Name: "heartbeat-shared-group", Kind: Heartbeat, Conns: 4, Groups: 1, Members: 4, Partitions: 8}),
		short(Scenario{Name: "commit", Kind: Commit, Conns: 4, Groups: 4, Partitions: 8}),
		short(Scenario{Name: "fetch", Kind: Fetch, Conns: 4, Groups: 2, Partitions: 8}),
		// A join barrier's rebalance can take long under -race on a busy
		// machine: give churn a window long enough to see several.
		{Name: "churn", Kind: Churn, Conns: 5, Groups: 1, Partitions: 8, Warmup: 100 * time.Millisecond, Duration: time.Second},
		{Name: "members", Kind: Members, Conns: 2, Groups: 20, Members: 5, Partitions: 8, Servers: []string{"minibroker", "floor"}},
		// Requests count the Produce answers read inside the window, and
		// kgo keeps one request in flight, which can take longer than a
		// short window under -race on a busy machine.
		{Name: "produce", Kind: Produce, Partitions: 8, Producers: 2, Warmup: 100 * time.Millisecond, Duration: time.Second},
		short(Scenario{Name: "produce-sync", Kind: ProduceSync, Partitions: 8, Producers: 2}),
		{Name: "consume", Kind: Consume, Partitions: 8, Producers: 2, Prefill: 5_000, Servers: []string{"minibroker", "kfake"}},
		short(Scenario{Name: "end-to-end", Kind: EndToEnd, Partitions: 8, Rate: 200, Servers: []string{"minibroker", "kfake"}}),
	}
	for _, sc := range scenarios {
		for name, srv := range servers {
			if !sc.RunsOn(name) {
				continue
			}
			t.Run(sc.Name+"/"+name, func(t *testing.T) {
				r := runUntilAcknowledged(t, Target{Name: name, Addr: srv.Addr}, sc)
				require.NoError(t, r.Err)
				require.Empty(t, r.Unexpected, "codes: %s", FormatCodes(r.Codes))
				require.Positive(t, r.Requests)
				switch {
				case sc.Kind == Churn && name == "floor":
					require.Positive(t, r.Cycles, "the floor has no generations, only cycles")
				case sc.Kind == Churn:
					require.Positive(t, r.Ops, "rebalances")
					require.Positive(t, r.Cycles)
				case sc.Kind.Records():
					require.Positive(t, r.Ops)
					n := sc
					require.NoError(t, n.Normalize())
					require.Equal(t, r.Ops*int64(n.ValueBytes), r.Bytes, "value bytes")
				default:
					require.Positive(t, r.Ops)
				}
				t.Logf("%s on %s: %.0f ops/s p50 %v p99 %v codes %s setup %s", sc.Name, name, r.Rate(),
					r.Latency.Quantile(0.5), r.Latency.Quantile(0.99), FormatCodes(r.Codes), FormatCodes(r.SetupCodes))
			})
		}
	}
}
