package integration

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/records"
	"github.com/minibroker/minibroker/testkit/wiretest"
	"github.com/minibroker/minibroker/wireclient"
)

// The produce storm: idempotent producers, each on its own connection,
// sending one batch per request with acks -1 to the partitions of
// "storm" in turn.
const (
	produceStormProducers  = 6
	produceStormPartitions = 4
)

// stormBatch is one batch a storm producer sent: where to, its bytes
// (base offset 0), and its producer id and first sequence.
type stormBatch struct {
	partition int32
	raw       []byte
	pid       int64
	seq       int32
}

// stormAck is a batch the broker acknowledged with NONE at base.
type stormAck struct {
	stormBatch
	base int64
}

// stormProducer is one idempotent producer of the storm; it lives
// across rounds, as a client that reconnects after a broker restart.
type stormProducer struct {
	id      int
	pid     int64
	next    [produceStormPartitions]int32 // next sequence per partition
	sent    int                           // requests sent, which picks the partition
	pending *stormBatch                   // sent without an answer: retried first in the next round
	rng     *rand.Rand
}

// batch returns the pending batch, or a new one of 1-5 records.
func (p *stormProducer) batch() stormBatch {
	if p.pending != nil {
		return *p.pending
	}
	part := int32(p.sent % produceStormPartitions)
	seq := p.next[part]
	n := 1 + p.rng.IntN(5)
	values := make([]string, n)
	for i := range values {
		values[i] = fmt.Sprintf("p%d-s%d-%s", p.id, int(seq)+i, strings.Repeat("x", p.rng.IntN(200)))
	}
	b := stormBatch{partition: part, raw: idempotentBatch(p.pid, 0, seq, values...), pid: p.pid, seq: seq}
	p.next[part] += int32(n)
	return b
}

// run produces until the connection breaks, sending acknowledged batches
// to acks and counting them in count. The batch whose answer it did not
// get stays pending.
func (p *stormProducer) run(t *testing.T, c *wireclient.Client, acks chan<- stormAck, count *atomic.Int64) {
	defer c.Close()
	for {
		b := p.batch()
		p.pending = &b
		p.sent++
		ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
		resp, err := c.Request(ctx, produceRequest(9, -1, "storm", partBatch{b.partition, b.raw}))
		cancel()
		if err != nil {
			return // the broker is gone; b is pending
		}
		rp := resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0]
		if rp.ErrorCode != codeNone {
			t.Errorf("producer %d, partition %d, sequence %d: error %d %v", p.id, b.partition, b.seq, rp.ErrorCode, rp.ErrorMessage)
			return
		}
		p.pending = nil
		acks <- stormAck{b, rp.BaseOffset}
		count.Add(1)
	}
}

// readPartition reads a partition from offset 0 to its high watermark
// with Fetch and returns its stored batches, back to back.
func readPartition(t *testing.T, c *wireclient.Client, partition int32) (raw []byte, hw int64) {
	t.Helper()
	for offset := int64(0); ; {
		req := fetchRequest(12, 0, fetchAt{"storm", partition, offset})
		req.MaxBytes, req.Topics[0].Partitions[0].PartitionMaxBytes = 8<<20, 8<<20
		p := fetchPartitions(t, c, req)[fmt.Sprintf("storm-%d", partition)]
		require.Equal(t, codeNone, p.ErrorCode, "storm-%d at %d", partition, offset)
		raw = append(raw, p.RecordBatches...)
		recs, err := records.Decode(p.RecordBatches)
		require.NoError(t, err, "storm-%d: stored batches decode", partition)
		if len(recs) > 0 {
			offset = recs[len(recs)-1].Offset + 1
		}
		if offset >= p.HighWatermark {
			return raw, p.HighWatermark
		}
	}
}

// stormKey names an idempotent batch in a partition: producer id,
// partition, first sequence.
type stormKey struct {
	pid       int64
	partition int32
	seq       int32
}

// stormStored is where a batch lies in a partition read back whole.
type stormStored struct {
	pos  int // in the bytes readPartition returned
	base int64
}

// checkStorm verifies the log after a restart: each partition's offsets
// run from 0 to its high watermark without a gap or a repeat; every
// acknowledged batch is stored byte for byte at its acknowledged offset;
// no idempotent batch is stored twice. It returns where each stored batch
// is, so that a retried pending batch can be matched.
func checkStorm(t *testing.T, c *wireclient.Client, acked []stormAck) map[stormKey]stormStored {
	t.Helper()
	at := map[stormKey]stormStored{}
	stored := make([][]byte, produceStormPartitions)
	for part := range int32(produceStormPartitions) {
		raw, hw := readPartition(t, c, part)
		stored[part] = raw
		next := int64(0)
		for pos := 0; pos < len(raw); {
			base := int64(binary.BigEndian.Uint64(raw[pos:]))
			size := int(binary.BigEndian.Uint32(raw[pos+8:])) + 12
			last := base + int64(binary.BigEndian.Uint32(raw[pos+23:]))
			require.Equal(t, next, base, "storm-%d: offsets are contiguous", part)
			key := stormKey{int64(binary.BigEndian.Uint64(raw[pos+43:])), part, int32(binary.BigEndian.Uint32(raw[pos+53:]))}
			_, dup := at[key]
			require.False(t, dup, "storm-%d: producer %d sequence %d stored twice", part, key.pid, key.seq)
			at[key] = stormStored{pos, base}
			next = last + 1
			pos += size
		}
		require.Equal(t, hw, next, "storm-%d: the batches end at the high watermark", part)
	}
	for _, a := range acked {
		st, ok := at[stormKey{a.pid, a.partition, a.seq}]
		require.True(t, ok, "storm-%d: acknowledged batch at %d (producer %d, sequence %d) lost", a.partition, a.base, a.pid, a.seq)
		require.Equal(t, a.base, st.base, "storm-%d: acknowledged batch moved", a.partition)
		require.True(t, bytes.Equal(stampOffset(a.raw, a.base), stored[a.partition][st.pos:st.pos+len(a.raw)]),
			"storm-%d: the batch at %d is not the acknowledged bytes", a.partition, a.base)
	}
	return at
}

// TestCrashKillDuringProduceStorm SIGKILLs the broker process while six
// idempotent producers send batches with acks -1 (64 KiB segments, so
// that kills also land near rolls), at a random moment, four times on one
// data dir. After each restart, before the storm resumes, every
// partition's offsets are contiguous from 0 to the high watermark, every
// acknowledged batch is there byte for byte at its acknowledged offset,
// and no idempotent batch is stored twice. Each producer then first
// retries the batch it had no answer for: it is answered NONE at the
// offset where it was stored before the kill, if it was, and stored
// once.
func TestCrashKillDuringProduceStorm(t *testing.T) {
	t.Parallel()
	const rounds = 4
	dir := t.TempDir()
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 2))
	args := []string{"--data-dir", dir, "--topic", fmt.Sprintf("storm:%d", produceStormPartitions),
		"--segment-bytes", "65536", "--log-level", "info"}

	producers := make([]*stormProducer, produceStormProducers)
	var acked []stormAck
	var total atomic.Int64
	cuts, retried := 0, 0
	for round := 0; round <= rounds; round++ {
		p := startProcess(t, args...)
		cuts += strings.Count(p.logs.String(), "cut off the newest segment")
		c := wiretest.Dial(t, p.Addr, "process-test")
		at := checkStorm(t, c, acked)
		if round == rounds {
			break
		}
		// A pending batch stored before the kill must be answered, when
		// retried, at the offset it was stored at.
		retries := map[stormKey]int64{}
		for i := range producers {
			if producers[i] == nil {
				producers[i] = &stormProducer{id: i, pid: initProducerID(t, c), rng: rand.New(rand.NewPCG(uint64(seed), uint64(i)))}
			}
			if pb := producers[i].pending; pb != nil {
				key := stormKey{pb.pid, pb.partition, pb.seq}
				retries[key] = -1
				if st, ok := at[key]; ok {
					retries[key] = st.base
				}
			}
		}
		collect := func(a stormAck) {
			acked = append(acked, a)
			if want, ok := retries[stormKey{a.pid, a.partition, a.seq}]; ok && want >= 0 {
				require.Equal(t, want, a.base, "storm-%d: a retry of a batch stored before the kill gets its offset", a.partition)
				retried++
			}
		}
		acks := make(chan stormAck, 64)
		var wg sync.WaitGroup
		before := total.Load()
		for _, pr := range producers {
			conn := wiretest.Dial(t, p.Addr, "process-test")
			wg.Go(func() { pr.run(t, conn, acks, &total) })
		}
		done := make(chan struct{})
		go func() { wg.Wait(); close(done) }()
		wait := int64(20 + rng.IntN(300)) // acknowledged batches before the kill
		killed := false
		for stop := false; !stop; {
			select {
			case a := <-acks:
				collect(a)
			case <-done:
				require.True(t, killed, "the producers stopped before the kill")
				stop = true
			case <-time.After(waitTimeout):
				t.Fatal("the storm stalled")
			}
			if !killed && total.Load()-before >= wait {
				require.Equal(t, -1, p.signal(t, syscall.SIGKILL, waitTimeout), "killed, not exited")
				killed = true
			}
		}
		for len(acks) > 0 {
			collect(<-acks)
		}
		t.Logf("round %d: killed after %d acknowledged batches (aimed at %d)", round, total.Load()-before, wait)
	}
	t.Logf("%d rounds, %d batches acknowledged in all, none lost, moved or stored twice; %d retries of batches stored before a kill got their offsets; %d torn tails cut at restart",
		rounds, total.Load(), retried, cuts)
}
