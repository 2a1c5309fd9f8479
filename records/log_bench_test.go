package records

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"
	"time"
)

// The benchmarks run on the disk under the test's temp directory, with
// fdatasync: run them with
//
//	go test -run '^$' -bench . -benchmem ./records/
//
// BenchmarkFloor* are what the disk gives a program that only writes the
// same bytes and syncs them, the floor to compare with.

// benchBatch is a batch of records of valueBytes each, about batchBytes
// before compression, as a kgo producer with large batches sends.
func benchBatch(b *testing.B, valueBytes, batchBytes int, c Codec) []byte {
	n := max(1, batchBytes/(valueBytes+12))
	values := make([][]byte, n)
	for i := range values {
		v := make([]byte, valueBytes)
		for j := range v {
			v[j] = byte('a' + (i*7+j*13)%26) // compressible, not trivially
		}
		values[i] = v
	}
	return build(b, spec{values: values, codec: c})
}

// BenchmarkAppend appends batches of 100-byte and 1 KiB records, 64 KiB
// per batch, uncompressed and compressed, from eight producers over four
// partitions, each waiting for durability: what a Produce handler does
// for eight kgo producers. MB/s counts the records before compression.
func BenchmarkAppend(b *testing.B) {
	for _, size := range []struct {
		name  string
		value int
	}{{"100B", 100}, {"1KiB", 1024}} {
		for _, c := range []Codec{CodecNone, CodecSnappy, CodecZstd} {
			b.Run(size.name+"/"+c.String(), func(b *testing.B) {
				raw := benchBatch(b, size.value, 64<<10, c)
				l := benchLog(b, 4)
				var next atomic.Int32
				b.SetBytes(64 << 10) // records as produced, before compression
				b.SetParallelism(4)  // 8 producers on 2 CPUs
				b.ResetTimer()
				b.RunParallel(func(pb *testing.PB) {
					p := next.Add(1) % 4
					mine := bytes.Clone(raw)
					for pb.Next() {
						setBaseOffset(mine, 0)
						v, err := l.Validate(mine)
						if err != nil {
							b.Fatal(err)
						}
						pd, err := l.Append("t", p, v)
						if err != nil {
							b.Fatal(err)
						}
						if _, err := pd.Wait(); err != nil {
							b.Fatal(err)
						}
					}
				})
				st := l.Stats()
				b.ReportMetric(float64(st.BatchesAppended)/float64(max(st.FlushRounds, 1)), "batches/round")
			})
		}
	}
}

// BenchmarkProduceRequest is one connection's Produce requests as a kgo
// producer with large batches sends them: each request carries a batch of
// about 1 MB (kgo's ProducerBatchMaxBytes) of 100-byte records for each of
// four partitions; all four are appended, then waited for (one flush round
// per request), and the next request follows. MB/s counts records before
// compression. The values are random letters, which snappy (no entropy
// coding) barely shrinks. Compare with BenchmarkFloorWriteSync/1MB.
func BenchmarkProduceRequest(b *testing.B) {
	for _, c := range []Codec{CodecNone, CodecSnappy} {
		b.Run(c.String(), func(b *testing.B) {
			rng := rand.New(rand.NewPCG(1, 2))
			var values [][]byte
			for range 8500 { // about 1 MB, kgo's ProducerBatchMaxBytes
				v := make([]byte, 100)
				for j := range v {
					v[j] = byte('a' + rng.IntN(20)) // about 2x for snappy
				}
				values = append(values, v)
			}
			raw := build(b, spec{values: values, codec: c})
			l := benchLog(b, 4)
			batches := make([][]byte, 4)
			for i := range batches {
				batches[i] = bytes.Clone(raw)
			}
			pending := make([]*Pending, 4)
			b.SetBytes(4 * int64(len(build(b, spec{values: values}))))
			b.ResetTimer()
			for b.Loop() {
				for p := range 4 {
					setBaseOffset(batches[p], 0)
					v, err := l.Validate(batches[p])
					if err != nil {
						b.Fatal(err)
					}
					if pending[p], err = l.Append("t", int32(p), v); err != nil {
						b.Fatal(err)
					}
				}
				for _, pd := range pending {
					if _, err := pd.Wait(); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64(len(raw)), "stored-bytes/batch")
		})
	}
}

// BenchmarkAppendSingleRecord appends one 100-byte record at a time and
// waits for it: the latency of a producer that sends one record per
// request. Compare p50 with BenchmarkFloorWriteSync/100B.
func BenchmarkAppendSingleRecord(b *testing.B) {
	raw := benchBatch(b, 100, 100, CodecNone)
	l := benchLog(b, 1)
	lat := make([]time.Duration, 0, b.N)
	b.SetBytes(int64(len(raw)))
	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
		setBaseOffset(raw, 0)
		v, err := l.Validate(raw)
		if err != nil {
			b.Fatal(err)
		}
		pd, err := l.Append("t", 0, v)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := pd.Wait(); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(start))
	}
	reportPercentiles(b, lat)
}

// BenchmarkPrealloc appends one 1,100-byte batch at a time to a real file
// and waits for its fdatasync, with the active segment allocated ahead
// (on, the default: prealloc.go) and appended to plainly (off). ns/op is
// one durable append.
func BenchmarkPrealloc(b *testing.B) {
	for _, tc := range []struct {
		name  string
		bytes int64 // Config.preallocBytes
	}{{"on", 0}, {"off", -1}} {
		b.Run(tc.name, func(b *testing.B) {
			raw := benchBatch(b, 1028, 1028, CodecNone)
			if len(raw) != 1100 {
				b.Fatalf("batch of %d bytes", len(raw))
			}
			cfg := Config{Dir: b.TempDir(), Now: func() time.Time { return testNow }, preallocBytes: tc.bytes}
			l, err := Open(cfg)
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = l.Close() })
			if err := l.CreatePartitions("t", 1); err != nil {
				b.Fatal(err)
			}
			lat := make([]time.Duration, 0, b.N)
			b.SetBytes(int64(len(raw)))
			for b.Loop() {
				start := time.Now()
				setBaseOffset(raw, 0)
				v, err := l.Validate(raw)
				if err != nil {
					b.Fatal(err)
				}
				pd, err := l.Append("t", 0, v)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := pd.Wait(); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(start))
			}
			reportPercentiles(b, lat)
		})
	}
}

// BenchmarkFloorWriteSync writes the bytes of one batch at the end of a
// file and fdatasyncs it, one batch at a time: the floor for a durable
// append that shares its sync with nobody.
func BenchmarkFloorWriteSync(b *testing.B) {
	for _, tc := range []struct {
		name string
		raw  []byte
	}{
		{"100B", benchBatch(b, 100, 100, CodecNone)},
		{"64KiB", benchBatch(b, 100, 64<<10, CodecNone)},
		{"1MB", benchBatch(b, 100, 1000000, CodecNone)},
	} {
		b.Run(tc.name, func(b *testing.B) {
			f, err := os.Create(filepath.Join(b.TempDir(), "floor"))
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			lat := make([]time.Duration, 0, b.N)
			off := int64(0)
			b.SetBytes(int64(len(tc.raw)))
			b.ResetTimer()
			for b.Loop() {
				start := time.Now()
				if _, err := f.WriteAt(tc.raw, off); err != nil {
					b.Fatal(err)
				}
				off += int64(len(tc.raw))
				if err := syncData(f); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(start))
			}
			reportPercentiles(b, lat)
		})
	}
}

// BenchmarkFloorGroupSync writes eight 64 KiB batches and syncs once: the
// floor for perfect group commit of eight producers on one file.
func BenchmarkFloorGroupSync(b *testing.B) {
	raw := benchBatch(b, 100, 64<<10, CodecNone)
	f, err := os.Create(filepath.Join(b.TempDir(), "floor"))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	off := int64(0)
	b.SetBytes(int64(8 * len(raw)))
	for b.Loop() {
		for range 8 {
			if _, err := f.WriteAt(raw, off); err != nil {
				b.Fatal(err)
			}
			off += int64(len(raw))
		}
		if err := syncData(f); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkValidate validates one 64 KiB batch of 100-byte records, and
// (1KiB) one of about 512 KiB of 1 KiB records as kgo sends them: the CPU
// a produce costs before any I/O.
func BenchmarkValidate(b *testing.B) {
	b.Run("1KiB", func(b *testing.B) {
		raw := benchBatch(b, 1024, 512<<10, CodecNone)
		v := newTestValidator(Config{})
		b.SetBytes(int64(len(raw)))
		b.ReportAllocs()
		for b.Loop() {
			if _, err := v.validate(raw); err != nil {
				b.Fatal(err)
			}
		}
	})
	for _, c := range []Codec{CodecNone, CodecGzip, CodecSnappy, CodecLZ4, CodecZstd} {
		b.Run(c.String(), func(b *testing.B) {
			raw := benchBatch(b, 100, 64<<10, c)
			v := newTestValidator(Config{})
			b.SetBytes(64 << 10)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := v.validate(raw); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkRead reads 1 MiB of whole batches at a time from a 64 MiB
// partition, at offsets spread over the log, into a reused buffer: a
// Fetch of a consumer catching up.
func BenchmarkRead(b *testing.B) {
	raw := benchBatch(b, 100, 16<<10, CodecNone)
	l := benchLog(b, 1)
	var pending []*Pending
	for range (64 << 20) / len(raw) {
		setBaseOffset(raw, 0)
		v, err := l.Validate(raw)
		if err != nil {
			b.Fatal(err)
		}
		pd, err := l.Append("t", 0, v)
		if err != nil {
			b.Fatal(err)
		}
		pending = append(pending, pd)
	}
	for _, pd := range pending {
		if _, err := pd.Wait(); err != nil {
			b.Fatal(err)
		}
	}
	_, hw, err := l.Offsets("t", 0)
	if err != nil {
		b.Fatal(err)
	}
	buf := make([]byte, 0, 1<<20)
	b.SetBytes(1 << 20)
	b.ReportAllocs()
	b.ResetTimer()
	off := int64(0)
	for b.Loop() {
		res, err := l.Read("t", 0, off, 1<<20, true, buf)
		if err != nil {
			b.Fatal(err)
		}
		if len(res.Records) < 512<<10 {
			b.Fatalf("read %d bytes", len(res.Records))
		}
		if off += 7919 * 17; off >= hw-10000 {
			off = 0
		}
	}
}

func benchLog(b *testing.B, partitions int32) *Log {
	cfg := Config{Dir: b.TempDir(), Now: func() time.Time { return testNow }}
	l, err := Open(cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = l.Close() })
	if err := l.CreatePartitions("t", partitions); err != nil {
		b.Fatal(err)
	}
	return l
}

func reportPercentiles(b *testing.B, lat []time.Duration) {
	if len(lat) == 0 {
		return
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-us")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-us")
}

// BenchmarkProduceRequest16 is one Produce request of the shape kgo
// sends at its defaults with 1 KiB records over 16 partitions: a batch of
// about 512 KiB for each, validated, appended (one write per partition)
// and waited for (one flush round, 16 fdatasyncs in parallel). MB/s counts
// the batches' bytes; allocs/op are the write path's per request.
func BenchmarkProduceRequest16(b *testing.B) {
	raw := benchBatch(b, 1024, 512<<10, CodecNone)
	l := benchLog(b, 16)
	batches := make([][]byte, 16)
	for i := range batches {
		batches[i] = bytes.Clone(raw)
	}
	pending := make([]*Pending, 16)
	b.SetBytes(16 * int64(len(raw)))
	b.ReportAllocs()
	for b.Loop() {
		for p := range batches {
			setBaseOffset(batches[p], 0)
			v, err := l.Validate(batches[p])
			if err != nil {
				b.Fatal(err)
			}
			if pending[p], err = l.Append("t", int32(p), v); err != nil {
				b.Fatal(err)
			}
		}
		for _, pd := range pending {
			if _, err := pd.Wait(); err != nil {
				b.Fatal(err)
			}
		}
	}
}
