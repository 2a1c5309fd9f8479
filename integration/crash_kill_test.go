package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/testkit/wiretest"
	"github.com/minibroker/minibroker/wireclient"
)

// stormConns is how many connections commit in the kill test, each to
// its own partition of topic "storm".
const stormConns = 32

// storm runs one connection per partition of "storm" against addr, each
// committing increasing offsets to its partition directly (generation -1)
// from next[p], and records in acked[p] the highest offset acknowledged
// with NONE, counting every acknowledgement in count. It returns once the
// clients have connected; stop waits for them, which end when their
// connection breaks.
func storm(t *testing.T, addr, group string, next []int64, acked []atomic.Int64, count *atomic.Int64) (stop func()) {
	t.Helper()
	var wg sync.WaitGroup
	clients := make([]*wireclient.Client, len(next))
	for p := range clients {
		ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
		c, err := wireclient.Dial(ctx, addr, "storm")
		cancel()
		require.NoError(t, err)
		clients[p] = c
	}
	for p, c := range clients {
		wg.Go(func() { // owns c
			defer c.Close()
			for offset := next[p]; ; offset++ {
				ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
				resp, err := c.Request(ctx, directCommit(group, "storm", int32(p), offset))
				cancel()
				if err != nil {
					return // the broker is gone
				}
				if code := resp.(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode; code != 0 {
					t.Errorf("partition %d offset %d: error %d", p, offset, code)
					return
				}
				acked[p].Store(offset)
				count.Add(1)
			}
		})
	}
	return wg.Wait
}

// committedStorm fetches group's offsets of every storm partition.
func committedStorm(t *testing.T, addr, group string) []int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
	defer cancel()
	c, err := wireclient.Dial(ctx, addr, "check")
	require.NoError(t, err)
	defer c.Close()
	parts := make([]tp, stormConns)
	for p := range parts {
		parts[p] = tp{"storm", int32(p), 0}
	}
	fetched := fetchOffsets(t, c, group, parts...)
	out := make([]int64, stormConns)
	for p := range out {
		out[p] = fetched[fmt.Sprintf("storm-%d", p)]
	}
	return out
}

// TestCrashKillDuringCommitStorm SIGKILLs the broker process while 32
// connections commit, at a random moment (after a random number of
// acknowledged commits), five times on one data dir. After each kill the
// broker restarts on the dir (so the files load: a corrupt offsets.json or
// journal stops startup), and every partition's committed offset is at
// least the last one acknowledged with NONE before the kill. Offsets
// committed but not acknowledged may be there or not. At the end a clean
// stop leaves a valid offsets.json holding them all.
func TestCrashKillDuringCommitStorm(t *testing.T) {
	t.Parallel()
	const rounds = 5
	dir := t.TempDir()
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 1))
	args := []string{"--data-dir", dir, "--topic", fmt.Sprintf("storm:%d", stormConns), "--log-level", "info"}

	acked := make([]atomic.Int64, stormConns) // highest acknowledged offset, across rounds
	var total atomic.Int64                    // acknowledged commits, across rounds
	for round := range rounds {
		p := startProcess(t, args...)
		next := committedStorm(t, p.Addr, "storm")
		for i := range next {
			next[i] = max(next[i], 0) // -1: nothing committed; acked is 0 until the first acknowledgement
			require.GreaterOrEqual(t, next[i], acked[i].Load(), "round %d, partition %d: an acknowledged commit was lost", round, i)
			next[i]++
		}
		before := total.Load()
		wait := int64(stormConns * (5 + rng.IntN(60))) // acknowledged commits before the kill
		stop := storm(t, p.Addr, "storm", next, acked, &total)
		eventually(t, func() bool { return total.Load()-before >= wait }, "the storm gets going")
		require.Equal(t, -1, p.signal(t, syscall.SIGKILL, waitTimeout), "killed, not exited")
		stop()
		t.Logf("round %d: killed after %d acknowledged commits (aimed at %d)", round, total.Load()-before, wait)
	}

	// A last run: everything acknowledged is there; one more commit per
	// partition, then a clean stop folds the journal, replayed segments
	// included, into offsets.json. (A clean stop of a run that commits
	// nothing leaves the journal as it found it: offsets.json alone is
	// then older than what the broker serves.)
	p := startProcess(t, args...)
	final := committedStorm(t, p.Addr, "storm")
	c := wiretest.Dial(t, p.Addr, "process-test")
	for i := range final {
		require.GreaterOrEqual(t, final[i], acked[i].Load(), "partition %d: an acknowledged commit was lost", i)
		final[i]++
		require.Equal(t, []int16{codeNone}, wiretest.Commit(t, c, directCommit("storm", "storm", int32(i), final[i])))
	}
	require.Equal(t, 0, p.signal(t, syscall.SIGTERM, waitTimeout))
	onDisk := readOffsetsJSON(t, filepath.Join(dir, "offsets.json"))["storm"]
	for i := range final {
		assert.Equal(t, final[i], onDisk[fmt.Sprintf("storm-%d", i)], "offsets.json holds every acknowledged commit")
	}
	journal, err := filepath.Glob(filepath.Join(dir, "offsets.journal.*"))
	require.NoError(t, err)
	assert.Empty(t, journal, "a clean stop after a commit leaves only offsets.json")
	t.Logf("%d rounds, %d commits acknowledged in all, none lost", rounds, total.Load())
}

// readOffsetsJSON parses offsets.json in the chapter's format into group ->
// "topic-partition" -> offset, failing on a file that is not valid JSON of
// that shape.
func readOffsetsJSON(t *testing.T, path string) map[string]map[string]int64 {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	var file struct {
		Version int `json:"version"`
		Groups  map[string][]struct {
			Topic     string `json:"topic"`
			Partition int32  `json:"partition"`
			Offset    int64  `json:"offset"`
		} `json:"groups"`
	}
	require.NoError(t, json.Unmarshal(data, &file), "offsets.json is valid JSON:\n%s", data)
	require.Equal(t, 1, file.Version)
	out := map[string]map[string]int64{}
	for g, entries := range file.Groups {
		out[g] = map[string]int64{}
		for _, e := range entries {
			out[g][fmt.Sprintf("%s-%d", e.Topic, e.Partition)] = e.Offset
		}
	}
	return out
}
