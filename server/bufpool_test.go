package server

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestBufPoolClasses: get returns room for what is asked, in power-of-two
// classes from 16 KiB; put takes any buffer of at least the smallest class
// into the largest class its capacity fills, so that a later get of that
// class is served from it.
func TestBufPoolClasses(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ n, cap int }{
		{0, 16 << 10}, {1, 16 << 10}, {16 << 10, 16 << 10}, {16<<10 + 1, 32 << 10},
		{1 << 20, 1 << 20}, {3 << 20, 4 << 20}, {64 << 20, 64 << 20}, {64<<20 + 1, 64<<20 + 1},
	} {
		var p bufPool
		b := p.get(tc.n)
		require.Zero(t, len(b))
		require.Equal(t, tc.cap, cap(b), "get(%d)", tc.n)
	}
	var p bufPool
	odd := make([]byte, 10, 3<<20) // 3 MiB fills the 2 MiB class
	p.put(odd)
	got := p.get(2 << 20)
	require.Zero(t, len(got))
	require.GreaterOrEqual(t, cap(got), 2<<20)
	p.put(make([]byte, 1<<10)) // too small to keep: dropped, no panic
}
