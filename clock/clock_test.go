package clock

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestManualStandsStillUntilAdvanced(t *testing.T) {
	t.Parallel()
	start := time.UnixMilli(0)
	m := NewManual(start)
	require.Equal(t, start, m.Now())
	require.Equal(t, start, m.Now())

	now, err := m.Advance(100 * time.Millisecond)
	require.NoError(t, err)
	require.Equal(t, int64(100), now.UnixMilli())
	require.Equal(t, now, m.Now())

	now, err = m.Advance(0)
	require.NoError(t, err)
	require.Equal(t, int64(100), now.UnixMilli())
}

func TestManualRefusesToMoveBackwards(t *testing.T) {
	t.Parallel()
	m := NewManual(time.UnixMilli(50))
	now, err := m.Advance(-time.Millisecond)
	require.ErrorIs(t, err, ErrBackwards)
	require.Equal(t, int64(50), now.UnixMilli())
	require.Equal(t, int64(50), m.Now().UnixMilli())
}

func TestManualConcurrentAdvances(t *testing.T) {
	t.Parallel()
	m := NewManual(time.UnixMilli(0))
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				_, err := m.Advance(time.Millisecond)
				require.NoError(t, err)
				_ = m.Now()
			}
		})
	}
	wg.Wait()
	require.Equal(t, int64(800), m.Now().UnixMilli())
}

func TestSystemMovesForward(t *testing.T) {
	t.Parallel()
	a := System{}.Now()
	deadline := a.Add(5 * time.Second)
	for !(System{}).Now().After(a) {
		require.True(t, time.Now().Before(deadline), "system clock did not move")
	}
}
