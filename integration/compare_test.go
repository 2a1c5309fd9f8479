package integration

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/minibroker/minibroker/tools/compare"
	"github.com/minibroker/minibroker/tools/lab"
)

// TestCompareScenarios runs every comparison scenario against an
// in-process minibroker and an in-process kfake cluster in one test run,
// and asserts the answer each side is documented to give (the scenario
// table in tools/compare, explained row by row in
// docs/behavior-matrix.md). A change on either side fails the subtest of
// the scenario that sees it.
func TestCompareScenarios(t *testing.T) {
	t.Parallel()
	mb, err := compare.StartMinibroker(context.Background())
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, mb.Close()) })
	kfakeAddr, stopKfake, err := compare.StartKfake()
	require.NoError(t, err)
	t.Cleanup(stopKfake)
	addrs := map[compare.Side]string{compare.Minibroker: mb.Addr(), compare.Kfake: kfakeAddr}
	names := lab.InProcess("compare")
	for _, side := range compare.Sides() {
		ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
		require.NoError(t, compare.Prepare(ctx, addrs[side], names), "preparing %s", side)
		cancel()
	}

	for _, sc := range compare.Scenarios() {
		t.Run(sc.Name, func(t *testing.T) {
			if !sc.Alone { // an Alone scenario runs before the others are released
				t.Parallel()
			}
			type answer struct {
				got string
				err error
			}
			answers := map[compare.Side]chan answer{}
			for _, side := range compare.Sides() { // both sides at once: some scenarios wait on the clock
				ch := make(chan answer, 1)
				answers[side] = ch
				go func() {
					// Generous: a loaded machine may delay a broker's timers.
					ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
					defer cancel()
					got, err := compare.RunScenario(ctx, sc, addrs[side], names)
					ch <- answer{got, err}
				}()
			}
			for _, side := range compare.Sides() {
				a := <-answers[side]
				require.NoError(t, a.err, "%s on %s", sc.Name, side)
				require.True(t, sc.Matches(side, a.got), "%s on %s: got %q, documented %q; see row %s of docs/behavior-matrix.md", sc.Name, side, a.got, sc.Want(side), sc.Row)
			}
		})
	}
}
