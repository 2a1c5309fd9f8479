package records

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestIdlePartitionsHoldOneFile: after Open, a partition of many
// segments holds one descriptor (its active segment's); reads of every
// older segment go through the cache, which never holds more than
// sealedFiles while idle; Close leaves none open.
func TestIdlePartitionsHoldOneFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := testConfig(t, dir)
	cfg.SegmentBytes = 1024
	l := open(t, cfg)
	require.NoError(t, l.CreatePartitions("t", 3))
	var want [3][][]byte
	for i := range 450 {
		part := int32(i % 3)
		raw := build(t, spec{n: 2, value: 200})
		a := produce(t, l, "t", part, raw)
		want[part] = append(want[part], withBase(raw, a.BaseOffset))
	}
	require.NoError(t, l.Close())

	ffs := newFaultFS(osFS{})
	cfg.fs = ffs
	l = open(t, cfg)
	require.Equal(t, int64(3), ffs.openNow.Load(), "one file per partition, whatever its segments")
	segs := 0
	for p := range int32(3) {
		st, err := l.PartitionStats("t", p)
		require.NoError(t, err)
		segs += st.Segments
		require.Equal(t, want[p], readAll(t, l, "t", p))
	}
	require.Greater(t, segs, 3+sealedFiles, "more sealed segments than the cache holds")
	require.Equal(t, int64(3+sealedFiles), ffs.openNow.Load())
	require.Equal(t, sealedFiles, l.files.open())
	require.NoError(t, l.Close())
	require.Zero(t, ffs.openNow.Load())
}

// TestFileCacheInUse never closes a file a read still uses, and closes a
// forgotten one at its last release.
func TestFileCacheInUse(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ffs := newFaultFS(osFS{})
	c := newFileCache(ffs, 1)
	var segs []*segment
	for i := range 3 {
		s := newSegment(dir, int64(i), nil)
		f, _, err := osFS{}.OpenFile(s.path, true)
		require.NoError(t, err)
		require.NoError(t, f.Close())
		segs = append(segs, s)
	}
	a, err := c.acquire(segs[0])
	require.NoError(t, err)
	b, err := c.acquire(segs[1])
	require.NoError(t, err)
	again, err := c.acquire(segs[0])
	require.NoError(t, err)
	require.Same(t, a, again)
	require.Equal(t, int64(2), ffs.openNow.Load(), "both in use: over max, none closed")
	c.release(a)
	c.release(again)
	require.Equal(t, int64(1), ffs.openNow.Load(), "a is idle and over max: closed")
	c.forget([]*segment{segs[1]})
	require.Equal(t, int64(1), ffs.openNow.Load(), "b in use: kept")
	_, err = b.f.ReadAt(make([]byte, 0), 0)
	require.NoError(t, err)
	c.release(b)
	require.Zero(t, ffs.openNow.Load())
	x, err := c.acquire(segs[2])
	require.NoError(t, err)
	c.release(x)
	require.Equal(t, int64(1), ffs.openNow.Load(), "idle, within max: kept open")
	require.Equal(t, 1, c.open(), fmt.Sprint(c.entries))
}
