package offsets

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// benchStore opens a file store in a fresh directory holding stored
// offsets (groups of 1000 partitions) in offsets.json.
func benchStore(b *testing.B, stored int) *Store {
	b.Helper()
	dir := b.TempDir()
	if stored > 0 {
		t := table{}
		for i := range stored {
			t.commit(fmt.Sprintf("stored-%d", i/1000), []Entry{ent("orders", int32(i%1000), int64(i))})
		}
		require.NoError(b, os.WriteFile(filepath.Join(dir, FileName), encode(t, nil), 0o644))
	}
	s, err := Open(Config{Dir: dir})
	require.NoError(b, err)
	b.Cleanup(func() { require.NoError(b, s.Close()) })
	return s
}

// BenchmarkCommit measures one durable commit at a time (one write and
// one fsync each) with 1e3 and 1e6 offsets stored: the journal makes the
// two cost the same, where rewriting offsets.json grew with the second.
func BenchmarkCommit(b *testing.B) {
	for _, stored := range []int{1_000, 1_000_000} {
		b.Run(fmt.Sprintf("stored=%d", stored), func(b *testing.B) {
			s := benchStore(b, stored)
			lat := make([]time.Duration, 0, 1<<16)
			i := int64(0)
			for b.Loop() {
				i++
				start := time.Now()
				if err := s.Commit("bench", []Entry{ent("orders", int32(i%16), i)}); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(start))
			}
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
		})
	}
}

// BenchmarkCommitParallel commits from 64 goroutines at once: concurrent
// commits share records and fsyncs (group commit).
func BenchmarkCommitParallel(b *testing.B) {
	s := benchStore(b, 0)
	var n atomic.Int64
	b.SetParallelism(32) // 64 goroutines on 2 CPUs
	b.RunParallel(func(pb *testing.PB) {
		g := fmt.Sprintf("bench-%d", n.Add(1))
		i := int64(0)
		for pb.Next() {
			i++
			if err := s.Commit(g, []Entry{ent("orders", 0, i)}); err != nil {
				b.Error(err)
				return
			}
		}
	})
	st := s.Stats()
	b.ReportMetric(float64(st.Commits)/float64(max(st.Appends, 1)), "commits/fsync")
}

// BenchmarkCommitMemory is the in-memory store: the cost of ordering and
// applying a commit without the disk.
func BenchmarkCommitMemory(b *testing.B) {
	s := NewMemory()
	i := int64(0)
	for b.Loop() {
		i++
		if err := s.Commit("bench", []Entry{ent("orders", int32(i%16), i)}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkOpenReplay opens a directory whose journal holds 10,000
// single-offset commits.
func BenchmarkOpenReplay(b *testing.B) {
	dir := b.TempDir()
	s, err := Open(Config{Dir: dir, CompactBytes: -1})
	require.NoError(b, err)
	var data []byte
	for i := range 10_000 {
		data = appendRecord(data, []*op{commitOf(fmt.Sprintf("g%d", i%100), ent("orders", int32(i%16), int64(i)))})
	}
	require.NoError(b, s.Close())
	require.NoError(b, os.WriteFile(segmentPath(dir, 1), data, 0o644))
	for b.Loop() {
		s, err := Open(Config{Dir: dir})
		if err != nil {
			b.Fatal(err)
		}
		_ = s // never written: Close would leave the files as they are
	}
}
