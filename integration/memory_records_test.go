package integration

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/records"
	"github.com/minibroker/minibroker/testkit/wiretest"
	"github.com/minibroker/minibroker/wireclient"
)

// memoryGiBEnv, set to 1, makes TestMemoryRecordsLeaveNoResidue store a
// whole GiB; by default it stores 256 MiB, which make test can afford on
// two cores.
const memoryGiBEnv = "MINIBROKER_MEMORY_GIB"

// Bounds of TestMemoryRecordsLeaveNoResidue.
const (
	// memoryResidue bounds the broker's resident set after storing and
	// reading back, above what it was empty.
	memoryResidue = 16 << 20
	// memoryBatchBytes is the size of each produced batch: 1 MiB, within
	// the default --max-message-bytes.
	memoryBatchBytes = 1 << 20
	// memoryInFlight is how many produce requests each connection keeps
	// in flight.
	memoryInFlight = 4
	// memoryFetchBytes is each Fetch's MaxBytes and PartitionMaxBytes:
	// 1 MiB, what kgo and the Java consumer ask of a partition by
	// default. An answer is held whole in memory until it is written, so
	// the Go heap, and with it the resident set until the runtime's next
	// collection, follows the size of the answers in flight, not the
	// data held (docs/reliability.md gives the figures for 8 MiB).
	memoryFetchBytes = 1 << 20
)

// settledRSS polls the process's resident set every 50 ms until ten
// readings in a row lie within 256 KiB of each other, and returns the
// last one.
func settledRSS(t *testing.T, pid int) uint64 {
	t.Helper()
	var last []uint64
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	deadline := time.Now().Add(waitTimeout)
	for {
		last = append(last, procStatus(t, pid, "VmRSS"))
		if n := len(last); n >= 10 {
			lo, hi := last[n-10], last[n-10]
			for _, v := range last[n-10:] {
				lo, hi = min(lo, v), max(hi, v)
			}
			if hi-lo < 256<<10 {
				return last[n-1]
			}
		}
		if time.Now().After(deadline) {
			t.Logf("VmRSS did not settle within %v; last readings %v", waitTimeout, last[max(0, len(last)-10):])
			return last[len(last)-1]
		}
		<-tick.C
	}
}

// produceFrames sends n copies of batch to topic-partition on c with acks
// -1, keeping memoryInFlight requests in flight, and requires each answer
// to be NONE at the next offset.
func produceFrames(t *testing.T, c *wireclient.Client, topic string, partition int32, batch []byte, n int) {
	t.Helper()
	req := produceRequest(9, -1, topic, partBatch{partition, batch})
	frame := func(corr int32) []byte { return rawFrame(req, corr) }
	sent, answered := 0, 0
	for answered < n {
		for sent < n && sent-answered < memoryInFlight {
			require.NoError(t, c.Send(frame(int32(sent))))
			sent++
		}
		resp := readAnswer(t, c, req, int32(answered)).(*kmsg.ProduceResponse)
		rp := resp.Topics[0].Partitions[0]
		require.Equal(t, codeNone, rp.ErrorCode, "batch %d", answered)
		require.Equal(t, int64(answered), rp.BaseOffset, "batch %d", answered)
		answered++
	}
}

// readBackFrames fetches topic-partition from 0 to its high watermark and
// requires every stored batch to be batch, byte for byte, at its offset.
func readBackFrames(t *testing.T, c *wireclient.Client, topic string, partition int32, batch []byte, n int) {
	t.Helper()
	next := int64(0)
	for next < int64(n) {
		req := fetchRequest(12, 0, fetchAt{topic, partition, next})
		req.MaxBytes, req.Topics[0].Partitions[0].PartitionMaxBytes = memoryFetchBytes, memoryFetchBytes
		p := fetchPartitions(t, c, req)[fmt.Sprintf("%s-%d", topic, partition)]
		require.Equal(t, codeNone, p.ErrorCode)
		require.NotEmpty(t, p.RecordBatches, "offset %d", next)
		for raw := p.RecordBatches; len(raw) > 0; raw = raw[len(batch):] {
			require.Equal(t, next, int64(binary.BigEndian.Uint64(raw)), "offsets are contiguous")
			require.True(t, bytes.Equal(batch[8:], raw[8:len(batch)]), "the batch at %d is the one produced", next)
			next++
		}
	}
}

// TestMemoryRecordsLeaveNoResidue runs the broker binary, stores 256 MiB
// of records (a GiB with MINIBROKER_MEMORY_GIB=1) as 1 MiB batches from
// two connections with four requests in flight each, reads them all back
// with 1 MiB fetches, and requires the broker's resident set, once
// settled, to be within 16 MiB of what it was empty: records live on disk
// and pass through bounded, short-lived buffers. The figures are logged
// and reported in docs/reliability.md.
func TestMemoryRecordsLeaveNoResidue(t *testing.T) {
	t.Parallel()
	total := 256 << 20
	if os.Getenv(memoryGiBEnv) == "1" {
		total = 1 << 30
	}
	const partitions = 2
	perPartition := total / memoryBatchBytes / partitions
	p := startProcess(t, "--data-dir", t.TempDir(), "--topic", fmt.Sprintf("mem:%d", partitions))
	pid := p.cmd.Process.Pid
	batch := batchOfSize(t, memoryBatchBytes)
	_, err := records.Decode(batch)
	require.NoError(t, err)

	empty := settledRSS(t, pid)
	start := time.Now()
	var wg sync.WaitGroup
	for part := range int32(partitions) {
		c := wiretest.Dial(t, p.Addr, "process-test")
		wg.Go(func() { produceFrames(t, c, "mem", part, batch, perPartition) })
	}
	wg.Wait()
	stored := time.Since(start)
	afterProduce := procStatus(t, pid, "VmRSS")
	start = time.Now()
	for part := range int32(partitions) {
		c := wiretest.Dial(t, p.Addr, "process-test")
		wg.Go(func() { readBackFrames(t, c, "mem", part, batch, perPartition) })
	}
	wg.Wait()
	read := time.Since(start)
	after := settledRSS(t, pid)
	peak := procStatus(t, pid, "VmHWM")
	t.Logf("%d MiB stored in %v and read back in %v; VmRSS empty %.1f MiB, after storing %.1f MiB, after reading back and settling %.1f MiB (+%.1f MiB); peak %.1f MiB",
		total>>20, stored.Round(time.Millisecond), read.Round(time.Millisecond),
		mib(empty), mib(afterProduce), mib(after), mib(after)-mib(empty), mib(peak))
	assert.Less(t, int64(after)-int64(empty), int64(memoryResidue), "resident set after storing and reading back, over the empty broker's")
}

func mib(n uint64) float64 { return float64(n) / (1 << 20) }
