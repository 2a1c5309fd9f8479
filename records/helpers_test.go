package records

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// testNow is the clock every test log runs on.
var testNow = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// testNowMs is testNow in Unix milliseconds, the first timestamp of
// built batches.
var testNowMs = testNow.UnixMilli()

// errInjected is what injected failures return.
var errInjected = errors.New("injected failure")

// spec describes a batch for build.
type spec struct {
	n        int      // records; default 1
	value    int      // bytes per value; default 10
	values   [][]byte // explicit values, overriding n and value
	codec    Codec
	xerial   bool    // snappy in Java's xerial framing
	firstTS  int64   // default testNowMs
	tsDeltas []int64 // per record; default 0, 1, 2, ...
	pid      int64   // producer id; 0 means -1 (not idempotent) unless idem
	idem     bool    // pid, epoch and seq are meant as given
	epoch    int16
	seq      int32
	headers  int // headers per record
}

// build encodes a batch as a client would: records with kmsg.Record
// fields and our own length prefix, compressed as a whole, in a
// kmsg.RecordBatch with the CRC computed.
func build(t testing.TB, s spec) []byte {
	t.Helper()
	values := s.values
	if values == nil {
		n := max(s.n, 1)
		size := s.value
		if size == 0 {
			size = 10
		}
		for i := range n {
			v := bytes.Repeat([]byte{byte('a' + i%26)}, size)
			values = append(values, v)
		}
	}
	first := s.firstTS
	if first == 0 {
		first = testNowMs
	}
	var recs []byte
	maxTS := int64(-1 << 63)
	for i, v := range values {
		d := int64(i)
		if s.tsDeltas != nil {
			d = s.tsDeltas[i]
		}
		maxTS = max(maxTS, first+d)
		r := kmsg.Record{TimestampDelta64: d, OffsetDelta: int32(i), Key: []byte(fmt.Sprintf("k%d", i)), Value: v}
		for h := range s.headers {
			r.Headers = append(r.Headers, kmsg.Header{Key: fmt.Sprintf("h%d", h), Value: []byte("hv")})
		}
		recs = appendRecord(recs, r)
	}
	b := kmsg.RecordBatch{
		PartitionLeaderEpoch: -1, Magic: 2, Attributes: int16(s.codec),
		LastOffsetDelta: int32(len(values) - 1), FirstTimestamp: first, MaxTimestamp: maxTS,
		ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1, NumRecords: int32(len(values)),
		Records: compress(t, s.codec, s.xerial, recs),
	}
	if s.idem || s.pid != 0 {
		b.ProducerID, b.ProducerEpoch, b.FirstSequence = s.pid, s.epoch, s.seq
	}
	return encodeBatch(b)
}

// encodeBatch sets b's length, encodes it and computes its CRC.
func encodeBatch(b kmsg.RecordBatch) []byte {
	b.Length = int32(batchHeaderBytes - logOverhead + len(b.Records))
	return fixCRC(b.AppendTo(nil))
}

// rawBatch wraps records a test encoded itself (n of them, as the header
// claims) in an uncompressed batch with a consistent header.
func rawBatch(recs []byte, n int32) []byte {
	return encodeBatch(kmsg.RecordBatch{
		PartitionLeaderEpoch: -1, Magic: 2, LastOffsetDelta: n - 1,
		FirstTimestamp: testNowMs, MaxTimestamp: testNowMs,
		ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1, NumRecords: n, Records: recs,
	})
}

// appendRecord encodes r with its length prefix (kmsg.Record.AppendTo
// writes Length as given).
func appendRecord(dst []byte, r kmsg.Record) []byte {
	r.Length = 0
	body := r.AppendTo(nil)[1:] // a zero length is one varint byte
	dst = binary.AppendVarint(dst, int64(len(body)))
	return append(dst, body...)
}

// fixCRC recomputes a batch's CRC after a test changed it.
func fixCRC(b []byte) []byte {
	binary.BigEndian.PutUint32(b[offCRC:], checksum(b))
	return b
}

// compress compresses records as clients do.
func compress(t testing.TB, c Codec, xerial bool, data []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	switch c {
	case CodecNone:
		return data
	case CodecGzip:
		w := gzip.NewWriter(&buf)
		_, err := w.Write(data)
		require.NoError(t, err)
		require.NoError(t, w.Close())
	case CodecSnappy:
		if !xerial {
			return s2.EncodeSnappy(nil, data)
		}
		buf.WriteString(xerialMagic)
		buf.Write([]byte{0, 0, 0, 1, 0, 0, 0, 1})
		for chunk := range slices.Chunk(data, 32<<10) {
			enc := s2.EncodeSnappy(nil, chunk)
			buf.Write(binary.BigEndian.AppendUint32(nil, uint32(len(enc))))
			buf.Write(enc)
		}
	case CodecLZ4:
		w := lz4.NewWriter(&buf)
		_, err := w.Write(data)
		require.NoError(t, err)
		require.NoError(t, w.Close())
	case CodecZstd:
		w, err := zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1))
		require.NoError(t, err)
		out := w.EncodeAll(data, nil)
		require.NoError(t, w.Close())
		return out
	default:
		t.Fatalf("codec %d", c)
	}
	return buf.Bytes()
}

// testLogger logs to the test's output and keeps every record for
// assertions.
type testLogger struct {
	slog.Handler
	mu      *sync.Mutex
	records *[]slog.Record
}

func newTestLogger(t testing.TB) (*slog.Logger, *testLogger) {
	h := &testLogger{
		Handler: slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug}),
		mu:      &sync.Mutex{}, records: &[]slog.Record{},
	}
	return slog.New(h), h
}

func (h *testLogger) Handle(ctx context.Context, r slog.Record) error {
	h.mu.Lock()
	*h.records = append(*h.records, r.Clone())
	h.mu.Unlock()
	return h.Handler.Handle(ctx, r)
}

func (h *testLogger) WithAttrs(as []slog.Attr) slog.Handler {
	return &testLogger{Handler: h.Handler.WithAttrs(as), mu: h.mu, records: h.records}
}

// find returns the messages logged at level that contain msg, with their
// attributes as text.
func (h *testLogger) find(level slog.Level, msg string) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for _, r := range *h.records {
		if r.Level != level || !strings.Contains(r.Message, msg) {
			continue
		}
		var sb strings.Builder
		sb.WriteString(r.Message)
		r.Attrs(func(a slog.Attr) bool {
			fmt.Fprintf(&sb, " %s=%v", a.Key, a.Value)
			return true
		})
		out = append(out, sb.String())
	}
	return out
}

// testConfig is a Config for a test: the test clock and logger.
func testConfig(t testing.TB, dir string) Config {
	logger, _ := newTestLogger(t)
	return Config{Dir: dir, Now: func() time.Time { return testNow }, Logger: logger}
}

// open opens a Log on cfg and closes it at the end of the test. Its
// batches may carry any producer id: the tests of sequences, recovery and
// reads pick their own ids. TestProduceUnknownProducerID and the tests
// beside it open with openStrict, where Append checks the ids.
func open(t testing.TB, cfg Config) *Log {
	t.Helper()
	l := openStrict(t, cfg)
	l.pids.bound.Store(math.MaxInt64)
	return l
}

// openAnyPID is Open with the producer-id check off, as open has it, for
// tests that close the Log themselves.
func openAnyPID(cfg Config) (*Log, error) {
	l, err := Open(cfg)
	if err == nil {
		l.pids.bound.Store(math.MaxInt64)
	}
	return l, err
}

// openStrict opens a Log on cfg as Open does and closes it at the end of
// the test.
func openStrict(t testing.TB, cfg Config) *Log {
	t.Helper()
	l, err := Open(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Close() })
	return l
}

// openWith opens a Log on a new directory (or in memory with dir ""),
// with partitions 0..n-1 of topic "t".
func openWith(t testing.TB, cfg Config, n int32) *Log {
	t.Helper()
	l := open(t, cfg)
	require.NoError(t, l.CreatePartitions("t", n))
	return l
}

// produce validates, appends and waits for one batch.
func produce(t testing.TB, l *Log, topic string, partition int32, raw []byte) Appended {
	t.Helper()
	a, err := tryProduce(l, topic, partition, raw)
	require.NoError(t, err)
	return a
}

// tryProduce is produce returning the error.
func tryProduce(l *Log, topic string, partition int32, raw []byte) (Appended, error) {
	b, err := l.Validate(raw)
	if err != nil {
		return Appended{}, err
	}
	p, err := l.Append(topic, partition, b)
	if err != nil {
		return Appended{}, err
	}
	return p.Wait()
}

// readAll reads every durable batch of a partition, from its log start.
func readAll(t testing.TB, l *Log, topic string, partition int32) [][]byte {
	t.Helper()
	start, hw, err := l.Offsets(topic, partition)
	require.NoError(t, err)
	var out [][]byte
	for off := start; off < hw; {
		res, err := l.Read(topic, partition, off, 1<<20, true, nil)
		require.NoError(t, err)
		require.NotEmpty(t, res.Records)
		for b := res.Records; len(b) > 0; {
			h := parseHeader(b)
			out = append(out, b[:h.size()])
			b = b[h.size():]
			off = h.nextOffset()
		}
	}
	return out
}

// withBase returns a copy of raw with its base offset set, as stored.
func withBase(raw []byte, base int64) []byte {
	c := slices.Clone(raw)
	setBaseOffset(c, base)
	return c
}

// faultFS wraps a file system and lets a test fail or block its steps.
// Hooks are read under mu; each gets the path of the file concerned.
type faultFS struct {
	fileSystem
	mu       sync.Mutex
	write    func(path string) error // before each WriteAt
	sync     func(path string) error // before each Sync
	truncate func(path string) error // before each Truncate
	allocate func(path string) error // before each Allocate
	syncDir  func(dir string) error  // before each SyncDir
	atomic   func(path string) error // before each WriteFileAtomic
	open     func(path string) error // before each OpenFile
	syncs    atomic.Int64            // Syncs that reached the file system
	openNow  atomic.Int64            // files opened and not closed yet
}

func newFaultFS(inner fileSystem) *faultFS { return &faultFS{fileSystem: inner} }

func (f *faultFS) hook(which *func(string) error) func(string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return *which
}

func (f *faultFS) set(which *func(string) error, fn func(string) error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	*which = fn
}

func (f *faultFS) OpenFile(path string, create bool) (segmentFile, int64, error) {
	if h := f.hook(&f.open); h != nil {
		if err := h(path); err != nil {
			return nil, 0, err
		}
	}
	sf, size, err := f.fileSystem.OpenFile(path, create)
	if err != nil {
		return nil, 0, err
	}
	f.openNow.Add(1)
	return &faultFile{segmentFile: sf, path: path, fs: f}, size, nil
}

func (f *faultFS) SyncDir(dir string) error {
	if h := f.hook(&f.syncDir); h != nil {
		if err := h(dir); err != nil {
			return err
		}
	}
	return f.fileSystem.SyncDir(dir)
}

func (f *faultFS) WriteFileAtomic(path string, data []byte) error {
	if h := f.hook(&f.atomic); h != nil {
		if err := h(path); err != nil {
			return err
		}
	}
	return f.fileSystem.WriteFileAtomic(path, data)
}

type faultFile struct {
	segmentFile
	path   string
	fs     *faultFS
	closed atomic.Bool
}

func (f *faultFile) Close() error {
	if !f.closed.Swap(true) {
		f.fs.openNow.Add(-1)
	}
	return f.segmentFile.Close()
}

func (f *faultFile) WriteAt(p []byte, off int64) (int, error) {
	if h := f.fs.hook(&f.fs.write); h != nil {
		if err := h(f.path); err != nil {
			// A failed write may leave part of its bytes behind.
			n, _ := f.segmentFile.WriteAt(p[:len(p)/2], off)
			return n, err
		}
	}
	return f.segmentFile.WriteAt(p, off)
}

func (f *faultFile) Sync() error {
	if h := f.fs.hook(&f.fs.sync); h != nil {
		if err := h(f.path); err != nil {
			return err
		}
	}
	f.fs.syncs.Add(1)
	return f.segmentFile.Sync()
}

func (f *faultFile) Truncate(size int64) error {
	if h := f.fs.hook(&f.fs.truncate); h != nil {
		if err := h(f.path); err != nil {
			return err
		}
	}
	return f.segmentFile.Truncate(size)
}

func (f *faultFile) Allocate(off, n int64) error {
	if h := f.fs.hook(&f.fs.allocate); h != nil {
		if err := h(f.path); err != nil {
			return err
		}
	}
	return f.segmentFile.Allocate(off, n)
}

// crashCopy copies m's files and directories as they are, to open a Log
// on what a process killed now would leave (a memFS loses nothing of a
// killed process, as the page cache does not).
func crashCopy(m *memFS) *memFS {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := newMemFS()
	c.allocates = m.allocates
	for p, d := range m.files {
		d.mu.RLock()
		c.files[p] = &memData{data: slices.Clone(d.data)}
		d.mu.RUnlock()
	}
	for p := range m.dirs {
		c.dirs[p] = true
	}
	return c
}

// logsAbout returns the messages logged at level that name file.
func logsAbout(logs *testLogger, level slog.Level, file string) []string {
	var out []string
	for _, m := range logs.find(level, "") {
		if strings.Contains(m, " file="+file+" ") || strings.HasSuffix(m, " file="+file) {
			out = append(out, m)
		}
	}
	return out
}

// segmentFiles lists the segment files of a partition directory.
func segmentFiles(t testing.TB, dir string) []string {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, "*.log"))
	require.NoError(t, err)
	for i, n := range names {
		names[i] = filepath.Base(n)
	}
	return names
}

// fileSize returns a file's size.
func fileSize(t testing.TB, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	require.NoError(t, err)
	return fi.Size()
}

// eventually polls cond until it holds or a deadline passes.
func eventually(t testing.TB, cond func() bool, what string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		runtime.Gosched()
	}
}
