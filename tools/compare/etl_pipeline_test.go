package compare

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
)

// TestCompareETLChurnSchedule: the schedule is the seed's, keeps a stage
// between one member and one more than it started with, and spreads its
// changes over the middle of the run.
func TestCompareETLChurnSchedule(t *testing.T) {
	t.Parallel()
	cfg := ETLConfig{Records: 1000, Members: 2, Churn: 6, Seed: 3}.withDefaults()
	first := churnSchedule(cfg, 0)
	require.Equal(t, first, churnSchedule(cfg, 0), "same seed, same schedule")
	require.NotEqual(t, first, churnSchedule(cfg, 1), "each stage draws its own")
	require.Len(t, first, 6)
	for _, seed := range []uint64{1, 2, 3, 4, 5} {
		cfg.Seed = seed
		present, last := cfg.Members, 0
		for _, ev := range churnSchedule(cfg, 0) {
			require.Greater(t, ev.At, last, "seed %d: in order of progress", seed)
			require.Less(t, ev.At, cfg.Records, "seed %d", seed)
			last = ev.At
			if ev.Join {
				present++
			} else {
				require.Less(t, ev.Leave, present, "seed %d", seed)
				present--
			}
			require.GreaterOrEqual(t, present, 1, "seed %d", seed)
			require.LessOrEqual(t, present, cfg.Members+1, "seed %d", seed)
		}
	}
	cfg.Churn = 0
	require.Empty(t, churnSchedule(cfg, 0))
}

func TestCompareETLErrKind(t *testing.T) {
	t.Parallel()
	require.Equal(t, "ILLEGAL_GENERATION", errKind(fmt.Errorf("commit: %w", kerr.IllegalGeneration)))
	require.Equal(t, "boom", errKind(fmt.Errorf("boom")))
}
