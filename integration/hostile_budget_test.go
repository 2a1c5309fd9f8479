package integration

// The memory budget and the admin API under attackers: ListOffsets by
// timestamp on a batch that inflates hugely, connections that announce
// a large frame and stall, and slow connections to the admin API. Each
// test asserts what cannot depend on the machine's speed; the figures it
// measures are logged (go test -v) and reported in docs/reliability.md.

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/broker"
	"github.com/minibroker/minibroker/protocol"
	"github.com/minibroker/minibroker/records"
	"github.com/minibroker/minibroker/testkit/wiretest"
)

// scrapeSeries reads the series named (labels included, as /metrics
// writes them: `minibroker_memory_peak_bytes{lane="work"}`) from the admin
// API at addr.
func scrapeSeries(t *testing.T, addr, series string) float64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", "http://"+addr+"/metrics", nil)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), series+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			require.NoError(t, err, "%s %q", series, v)
			return f
		}
	}
	require.NoError(t, sc.Err())
	t.Fatalf("no %s in /metrics", series)
	return 0
}

// inflatingBatch is a zstd batch of one record whose value is size zero
// bytes: a few KiB that decompress to size.
func inflatingBatch(t *testing.T, size int) []byte {
	t.Helper()
	plain := records.EncodeBatch(records.BatchSpec{FirstTimestamp: time.Now().UnixMilli(),
		Records: []records.Record{{Key: []byte("big"), Value: make([]byte, size)}}})
	enc, err := zstd.NewWriter(nil, zstd.WithWindowSize(8<<20))
	require.NoError(t, err)
	defer enc.Close()
	out := enc.EncodeAll(plain[batchHeaderBytes:], slices.Clone(plain[:batchHeaderBytes]))
	binary.BigEndian.PutUint32(out[batchOffLength:], uint32(len(out)-12))
	binary.BigEndian.PutUint16(out[batchOffAttributes:], uint16(records.CodecZstd))
	return setCRC(out)
}

// TestHostileListOffsetsOnAnInflatingBatch: a stored zstd batch of a few
// KiB that inflates to 12 MiB (through the 8 MiB window a decompressor
// must hold), looked up by timestamp from 48 connections at once, twice
// each. Every lookup is answered with the record's offset and the broker's
// peak resident set stays under 160 MiB: its idle 12 MiB, the work lane's
// 32 MiB, at most records.MaxDecoders sets of decompressors of
// records.DecoderBytes (9 MiB) each, and the Go heap's room between
// collections. Before, every lookup built a decompressor of its own when
// the free list was empty and reserved nothing: 48 connections hold 48
// windows (400 MiB), and 512 connections took the broker to 2.4 GiB.
func TestHostileListOffsetsOnAnInflatingBatch(t *testing.T) {
	t.Parallel()
	const (
		conns       = 48
		lookups     = 2
		peakRSS     = 160 << 20
		inflateSize = 12 << 20
	)
	p := startProcess(t, "--data-dir", t.TempDir(), "--topic", "orders:4", "--topic", "inflate:1", "--admin", "127.0.0.1:0",
		"--max-inflight-bytes", strconv.Itoa(32<<20))
	pid := p.cmd.Process.Pid
	base := procStatus(t, pid, "VmRSS")
	batch := inflatingBatch(t, inflateSize)
	require.Less(t, len(batch), 64<<10, "zeros compress")
	first := int64(binary.BigEndian.Uint64(batch[27:])) // the batch's first timestamp
	ans := produceOne(t, wiretest.Dial(t, p.Addr, "process-test"), produceRequest(9, -1, "inflate", partBatch{0, batch}))
	require.Zero(t, ans.ErrorCode)

	stop := heartbeatProbe(t, p)
	var answered atomic.Int32
	var wg sync.WaitGroup
	for range conns {
		wg.Go(func() {
			c := wiretest.Dial(t, p.Addr, "process-test")
			for range lookups {
				req := kmsg.NewPtrListOffsetsRequest()
				req.Version, req.ReplicaID = 7, -1
				rt := kmsg.NewListOffsetsRequestTopic()
				rt.Topic = "inflate"
				rp := kmsg.NewListOffsetsRequestTopicPartition()
				rp.Timestamp = first
				rt.Partitions = []kmsg.ListOffsetsRequestTopicPartition{rp}
				req.Topics = []kmsg.ListOffsetsRequestTopic{rt}
				ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
				resp, err := c.Request(ctx, req)
				cancel()
				if !assert.NoError(t, err) {
					return
				}
				got := resp.(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0]
				if assert.Zero(t, got.ErrorCode) && assert.Equal(t, int64(0), got.Offset) && assert.Equal(t, first, got.Timestamp) {
					answered.Add(1)
				}
			}
		})
	}
	wg.Wait()
	lat := stop()
	peak := procStatus(t, pid, "VmHWM")
	admin := p.adminAddr(t)
	work := scrapeSeries(t, admin, `minibroker_memory_peak_bytes{lane="work"}`)
	t.Logf("%d lookups of a %d KiB batch inflating to %d MiB: RSS %d MiB before, peak %d MiB; work lane peak %.0f MiB, waits %.0f (%.1fs); heartbeat p99 %v over %d",
		answered.Load(), len(batch)>>10, inflateSize>>20, base>>20, peak>>20, work/(1<<20),
		scrapeSeries(t, admin, `minibroker_memory_waits_total{lane="work"}`), scrapeSeries(t, admin, `minibroker_memory_wait_seconds_total{lane="work"}`),
		p99(lat), len(lat))
	assert.Equal(t, int32(conns*lookups), answered.Load())
	assert.Less(t, peak, uint64(peakRSS), "peak RSS")
	assert.LessOrEqual(t, work, float64(32<<20), "the work lane within its budget")
	assert.Zero(t, scrapeSeries(t, admin, `minibroker_memory_refusals_total{lane="work"}`))
}

// TestHostileStalledSizePrefixes: nine connections announce a 16 MiB
// frame, send its API key and version (five a Produce's, four an
// ApiVersions') and stall, and reconnect whenever they are closed, against
// the default 128 MiB budget; a producer beside them sends 20 produces of
// 64 KiB, each acknowledged. A stalled frame keeps, after a 500 ms window,
// only its 16 KiB buffer of the budget.
// Before, the nine held the whole budget until FrameReadTimeout (30 s)
// and renewed it by reconnecting.
func TestHostileStalledSizePrefixes(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	defer func() {
		cancel()
		wg.Wait()
	}()
	head := binary.BigEndian.AppendUint32(nil, uint32(protocol.DefaultMaxFrameBytes))
	produce := binary.BigEndian.AppendUint16(binary.BigEndian.AppendUint16(slices.Clone(head), uint16(kmsg.Produce)), 9)
	versions := binary.BigEndian.AppendUint16(binary.BigEndian.AppendUint16(slices.Clone(head), uint16(kmsg.ApiVersions)), 3)
	for i := range 9 {
		prefix := produce
		if i >= 5 {
			prefix = versions
		}
		wg.Go(func() {
			for ctx.Err() == nil {
				var d net.Dialer
				c, err := d.DialContext(ctx, "tcp", b.Addr())
				if err != nil {
					return
				}
				stop := context.AfterFunc(ctx, func() { c.Close() })
				if _, err := c.Write(prefix); err == nil {
					_, _ = c.Read(make([]byte, 1)) // until the broker closes it
				}
				stop()
				c.Close()
			}
		})
	}
	eventually(t, func() bool { return b.MemoryStats().Frames.InUse > 0 }, "the stalled frames reserve")

	c := wiretest.Dial(t, b.Addr(), "producer")
	value := strings.Repeat("p", 64<<10)
	var lat []time.Duration
	for i := range 20 {
		start := time.Now()
		ans := produceOne(t, c, produceRequest(9, -1, "orders", partBatch{0, valuesBatch(fmt.Sprintf("%s-%d", value, i))}))
		lat = append(lat, time.Since(start))
		require.Zero(t, ans.ErrorCode)
		require.Equal(t, int64(i), ans.BaseOffset)
	}
	st := b.MemoryStats()
	t.Logf("20 produces of 64 KiB beside 9 stalled 16 MiB frames: p99 %v, max %v; frames lane after them %d KiB, peak %d MiB, waits %d (%v)",
		p99(lat), slicesMax(lat), st.Frames.InUse>>10, st.Frames.Peak>>20, st.Frames.Waits, st.Frames.WaitTime.Round(time.Millisecond))
	eventually(t, func() bool { return b.MemoryStats().Frames.InUse <= 9*firstChunk },
		"the stalled frames hold their first chunks at most")
	assert.Zero(t, st.Frames.Refusals)
}

// firstChunk is the buffer a large frame is read into first: what a
// stalled one holds.
const firstChunk = 16 << 10

func slicesMax(ds []time.Duration) time.Duration {
	var m time.Duration
	for _, d := range ds {
		m = max(m, d)
	}
	return m
}

// TestHostileSlowAdminConnections: 300 connections to the admin API send
// the start of a request and stall, reconnecting whenever they are
// closed; 7 GETs beside them are each answered. Each new connection takes
// the slot of the one that has waited longest for its request (at least
// 100 ms), so the stalled ones cannot hold the 64 slots. Before, they held
// the slots until ReadHeaderTimeout (5 s) and the GETs waited behind
// hundreds of them in the listen backlog: 4 of 7 finished.
func TestHostileSlowAdminConnections(t *testing.T) {
	t.Parallel()
	b := startBroker(t, func(cfg *broker.Config) { cfg.Admin = "127.0.0.1:0" })
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	defer func() {
		cancel()
		wg.Wait()
	}()
	var dials atomic.Int32
	for range 300 {
		wg.Go(func() {
			for ctx.Err() == nil {
				var d net.Dialer
				c, err := d.DialContext(ctx, "tcp", b.AdminAddr())
				if err != nil {
					return
				}
				dials.Add(1)
				stop := context.AfterFunc(ctx, func() { c.Close() })
				if _, err := c.Write([]byte("GET /v1/groups HTTP/1.1\r\nHost: 127.0.0.1\r\n")); err == nil {
					_, _ = c.Read(make([]byte, 1)) // until the broker closes it
				}
				stop()
				c.Close()
			}
		})
	}
	eventually(t, func() bool { return dials.Load() >= 300 }, "the slow connections dial")
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	var lat []time.Duration
	for range 7 {
		start := time.Now()
		resp, err := client.Get("http://" + b.AdminAddr() + "/v1/groups")
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode)
		lat = append(lat, time.Since(start))
	}
	t.Logf("7 GETs beside 300 slow connections (%d dials): max %v", dials.Load(), slicesMax(lat))
}
