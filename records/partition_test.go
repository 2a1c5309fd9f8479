package records

import (
	"bytes"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestAppendReadRoundTrip appends batches of every codec to a log on disk
// and in memory and reads them back: the stored bytes are the produced
// bytes with only the base offset rewritten, and offsets run on without a
// gap.
func TestAppendReadRoundTrip(t *testing.T) {
	t.Parallel()
	for _, dir := range []string{"disk", "memory"} {
		t.Run(dir, func(t *testing.T) {
			t.Parallel()
			cfg := testConfig(t, "")
			if dir == "disk" {
				cfg.Dir = t.TempDir()
			}
			l := openWith(t, cfg, 1)
			var want [][]byte
			next := int64(0)
			for i, c := range []Codec{CodecNone, CodecGzip, CodecSnappy, CodecLZ4, CodecZstd, CodecNone} {
				raw := build(t, spec{n: i + 1, codec: c})
				orig := bytes.Clone(raw)
				a := produce(t, l, "t", 0, raw)
				require.Equal(t, next, a.BaseOffset)
				require.Equal(t, next+int64(i), a.LastOffset)
				require.False(t, a.Duplicate)
				next = a.LastOffset + 1
				want = append(want, withBase(orig, a.BaseOffset))
			}
			require.Equal(t, want, readAll(t, l, "t", 0))
			start, hw, err := l.Offsets("t", 0)
			require.NoError(t, err)
			require.Equal(t, int64(0), start)
			require.Equal(t, int64(21), hw)
			if dir == "disk" {
				// Until Close the file is longer: space allocated ahead.
				require.NoError(t, l.Close())
				seg := filepath.Join(cfg.Dir, "t-0", "00000000000000000000.log")
				require.Equal(t, int64(len(bytes.Join(want, nil))), fileSize(t, seg))
			}
		})
	}
}

// TestOffsetsContiguousAcrossRolls appends enough to roll many segments:
// offsets stay contiguous, each segment is named by its first offset and
// no segment passes SegmentBytes unless it holds a single batch.
func TestOffsetsContiguousAcrossRolls(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t, t.TempDir())
	cfg.SegmentBytes = 4096
	l := openWith(t, cfg, 1)
	var want [][]byte
	for i := range 200 {
		n := 1 + i%5
		raw := build(t, spec{n: n, value: 50 + i%300})
		a := produce(t, l, "t", 0, raw)
		want = append(want, withBase(raw, a.BaseOffset))
	}
	big := build(t, spec{values: [][]byte{make([]byte, 6000)}})
	a := produce(t, l, "t", 0, big)
	want = append(want, withBase(big, a.BaseOffset))
	got := readAll(t, l, "t", 0)
	require.Equal(t, want, got)
	next := int64(0)
	for _, b := range got {
		h := parseHeader(b)
		require.Equal(t, next, h.baseOffset)
		next = h.nextOffset()
	}
	files := segmentFiles(t, filepath.Join(cfg.Dir, "t-0"))
	require.Greater(t, len(files), 10)
	st, err := l.PartitionStats("t", 0)
	require.NoError(t, err)
	require.Equal(t, len(files), st.Segments)
	require.Equal(t, next, st.HighWatermark)
	var total int64
	for _, name := range files {
		size := fileSize(t, filepath.Join(cfg.Dir, "t-0", name))
		total += size
		if size > cfg.SegmentBytes {
			require.Equal(t, int64(len(big)), size, "only a lone batch may pass SegmentBytes")
		}
		base, ok := parseSegmentName(name)
		require.True(t, ok)
		res, err := l.Read("t", 0, base, 1, true, nil)
		require.NoError(t, err)
		h := parseHeader(res.Records)
		require.Equal(t, base, h.baseOffset, "segment %s starts with its base offset", name)
	}
	require.Equal(t, st.Bytes, total)
}

// TestInvisibleUntilDurable blocks the sync of a flush round: the
// appended batch is written to the file but neither Read, Offsets nor the
// lookups show it, and its Pending is not done, until the sync returns.
func TestInvisibleUntilDurable(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t, t.TempDir())
	ffs := newFaultFS(osFS{})
	cfg.fs = ffs
	l := openWith(t, cfg, 1)
	produce(t, l, "t", 0, build(t, spec{n: 2}))

	entered, release := make(chan struct{}), make(chan struct{})
	ffs.set(&ffs.sync, func(string) error {
		entered <- struct{}{}
		<-release
		return nil
	})
	b, err := l.Validate(build(t, spec{n: 3, firstTS: testNowMs + 1000}))
	require.NoError(t, err)
	p, err := l.Append("t", 0, b)
	require.NoError(t, err)
	done := p.Done()
	<-entered

	seg := filepath.Join(cfg.Dir, "t-0", "00000000000000000000.log")
	require.Greater(t, fileSize(t, seg), int64(len(build(t, spec{n: 2}))), "written to the file")
	_, hw, err := l.Offsets("t", 0)
	require.NoError(t, err)
	require.Equal(t, int64(2), hw)
	res, err := l.Read("t", 0, 2, 1<<20, true, nil)
	require.NoError(t, err)
	require.Empty(t, res.Records)
	_, err = l.Read("t", 0, 3, 1<<20, true, nil)
	require.ErrorIs(t, err, ErrOffsetOutOfRange)
	off, ts, err := l.OffsetForTime("t", 0, testNowMs+1000)
	require.NoError(t, err)
	require.Equal(t, [2]int64{-1, -1}, [2]int64{off, ts})
	off, ts, err = l.MaxTimestamp("t", 0)
	require.NoError(t, err)
	require.Equal(t, [2]int64{1, testNowMs + 1}, [2]int64{off, ts})
	select {
	case <-done:
		t.Fatal("pending done before its sync returned")
	default:
	}

	ffs.set(&ffs.sync, nil)
	close(release)
	a, err := p.Wait()
	require.NoError(t, err)
	require.Equal(t, int64(2), a.BaseOffset)
	_, hw, err = l.Offsets("t", 0)
	require.NoError(t, err)
	require.Equal(t, int64(5), hw)
	off, ts, err = l.OffsetForTime("t", 0, testNowMs+1000)
	require.NoError(t, err)
	require.Equal(t, [2]int64{2, testNowMs + 1000}, [2]int64{off, ts})
}

// TestAppendUnknownPartition checks appends and reads of partitions the
// log does not hold.
func TestAppendUnknownPartition(t *testing.T) {
	t.Parallel()
	l := openWith(t, testConfig(t, ""), 2)
	b, err := l.Validate(build(t, spec{}))
	require.NoError(t, err)
	for _, tp := range []TopicPartition{{"t", 2}, {"t", -1}, {"u", 0}} {
		_, err := l.Append(tp.Topic, tp.Partition, b)
		require.ErrorIs(t, err, ErrUnknownPartition, tp.String())
		_, err = l.Read(tp.Topic, tp.Partition, 0, 100, true, nil)
		require.ErrorIs(t, err, ErrUnknownPartition)
		_, _, err = l.Offsets(tp.Topic, tp.Partition)
		require.ErrorIs(t, err, ErrUnknownPartition)
		_, _, err = l.OffsetForTime(tp.Topic, tp.Partition, 0)
		require.ErrorIs(t, err, ErrUnknownPartition)
		_, _, err = l.MaxTimestamp(tp.Topic, tp.Partition)
		require.ErrorIs(t, err, ErrUnknownPartition)
		_, err = l.PartitionStats(tp.Topic, tp.Partition)
		require.ErrorIs(t, err, ErrUnknownPartition)
	}
	_, err = l.Append("t", 0, Batch{})
	require.ErrorIs(t, err, ErrInvalidRecord)
}

// TestTopicPartitionString checks the directory name of a partition.
func TestTopicPartitionString(t *testing.T) {
	t.Parallel()
	require.Equal(t, "orders-3", TopicPartition{"orders", 3}.String())
	require.Equal(t, "a-b-12", fmt.Sprint(TopicPartition{"a-b", 12}))
}

// TestRollSyncsClosedSegment checks that a roll makes the segment it
// closes durable before the new one gets a byte, flush round or not, so
// that only the newest segment can ever hold a torn tail.
func TestRollSyncsClosedSegment(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t, t.TempDir())
	cfg.SegmentBytes = MinSegmentBytes
	ffs := newFaultFS(osFS{})
	cfg.fs = ffs
	l := openWith(t, cfg, 1)
	var synced []string
	ffs.set(&ffs.sync, func(path string) error {
		synced = append(synced, filepath.Base(path))
		return nil
	})
	_, err := l.Append("t", 0, mustValidate(t, l, build(t, spec{value: 600})))
	require.NoError(t, err)
	require.Empty(t, synced, "no round started yet")
	_, err = l.Append("t", 0, mustValidate(t, l, build(t, spec{value: 600})))
	require.NoError(t, err)
	require.Equal(t, []string{segmentName(0)}, synced, "rolling synced the closed segment")
	require.Equal(t, int64(1), l.Stats().Syncs)
}
