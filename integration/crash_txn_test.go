package integration

// kill -9 during a storm of transactions: transactional producers on
// raw connections write one record to each partition of "txstorm" and
// commit an offset of "txsrc" in every transaction, and commit or abort
// it; the broker is killed mid-storm, several times. After each restart:
// every transaction whose commit was answered is wholly visible to
// read_committed, offsets included; every one whose abort was answered is
// wholly invisible; one whose EndTxn got no answer is one or the other,
// never half; the last stable offset is the high watermark (nothing is
// left open); and the producers' old epochs are fenced.

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/testkit/wiretest"
	"github.com/minibroker/minibroker/wireclient"
)

const (
	txnStormProducers  = 3
	txnStormPartitions = 2
)

// txnOutcome is what a storm producer was told of one transaction.
type txnOutcome int

const (
	txnUnknown   txnOutcome = iota // no answer to EndTxn: the kill came first
	txnCommitted                   // EndTxn commit answered NONE
	txnAborted                     // EndTxn abort answered NONE
)

// txnStormProducer is one transactional id's producer across rounds.
type txnStormProducer struct {
	id       int
	next     int                // the next transaction number
	outcomes map[int]txnOutcome // guarded by the storm's mu
	rng      *rand.Rand
}

// runTxns runs transactions on c until the connection breaks.
func (sp *txnStormProducer) runTxns(t *testing.T, c *wireclient.Client, mu *sync.Mutex, count *atomic.Int64) {
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*waitTimeout)
	defer cancel()
	send := func(req kmsg.Request) kmsg.Response {
		resp, err := c.Request(ctx, req)
		if err != nil {
			return nil
		}
		return resp
	}
	id := fmt.Sprintf("storm-%d", sp.id)
	init := kmsg.NewPtrInitProducerIDRequest()
	init.Version, init.TransactionalID, init.TransactionTimeoutMillis = 4, &id, 60000
	r := send(init)
	if r == nil {
		return
	}
	ir := r.(*kmsg.InitProducerIDResponse)
	if ir.ErrorCode != 0 {
		t.Errorf("storm-%d: InitProducerId: code %d", sp.id, ir.ErrorCode)
		return
	}
	p := txnProducer{id: id, pid: ir.ProducerID, epoch: ir.ProducerEpoch}
	seq := int32(0)
	for {
		k := sp.next
		add := kmsg.NewPtrAddPartitionsToTxnRequest()
		add.Version, add.TransactionalID, add.ProducerID, add.ProducerEpoch = 3, id, p.pid, p.epoch
		add.Topics = []kmsg.AddPartitionsToTxnRequestTopic{{Topic: "txstorm", Partitions: []int32{0, 1}}}
		ao := kmsg.NewPtrAddOffsetsToTxnRequest()
		ao.Version, ao.TransactionalID, ao.ProducerID, ao.ProducerEpoch, ao.Group = 3, id, p.pid, p.epoch, "txg"
		if send(add) == nil || send(ao) == nil {
			return
		}
		for part := range int32(txnStormPartitions) {
			value := fmt.Sprintf("p%d-t%d-%d-%s", sp.id, k, part, strings.Repeat("x", sp.rng.IntN(100)))
			req := produceRequest(9, -1, "txstorm", partBatch{part, txnBatch(p, seq, value)})
			req.TransactionID = &id
			r := send(req)
			if r == nil {
				return
			}
			if code := r.(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode; code != 0 {
				t.Errorf("storm-%d txn %d: produce code %d", sp.id, k, code)
				return
			}
		}
		seq++ // one record per partition per transaction: the same sequence on each
		tc := kmsg.NewPtrTxnOffsetCommitRequest()
		tc.Version, tc.TransactionalID, tc.ProducerID, tc.ProducerEpoch = 3, id, p.pid, p.epoch
		tc.Group, tc.Generation = "txg", -1
		tcp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
		tcp.Partition, tcp.Offset = int32(sp.id), int64(k)
		tc.Topics = []kmsg.TxnOffsetCommitRequestTopic{{Topic: "txsrc", Partitions: []kmsg.TxnOffsetCommitRequestTopicPartition{tcp}}}
		if r := send(tc); r == nil {
			return
		} else if code := r.(*kmsg.TxnOffsetCommitResponse).Topics[0].Partitions[0].ErrorCode; code != 0 {
			t.Errorf("storm-%d txn %d: TxnOffsetCommit code %d", sp.id, k, code)
			return
		}
		commit := sp.rng.IntN(4) != 0
		end := kmsg.NewPtrEndTxnRequest()
		end.Version, end.TransactionalID, end.ProducerID, end.ProducerEpoch, end.Commit = 3, id, p.pid, p.epoch, commit
		mu.Lock()
		sp.outcomes[k] = txnUnknown
		sp.next++
		mu.Unlock()
		r := send(end)
		if r == nil {
			return
		}
		if code := r.(*kmsg.EndTxnResponse).ErrorCode; code != 0 {
			t.Errorf("storm-%d txn %d: EndTxn code %d", sp.id, k, code)
			return
		}
		mu.Lock()
		sp.outcomes[k] = map[bool]txnOutcome{true: txnCommitted, false: txnAborted}[commit]
		mu.Unlock()
		count.Add(1)
	}
}

// committedValues reads a partition of txstorm from 0 to its high
// watermark as a read_committed consumer sees it, and returns the
// values' "p<i>-t<k>" prefixes, with the LSO and high watermark.
func committedValues(t *testing.T, c *wireclient.Client, partition int32) (map[string]bool, int64, int64) {
	t.Helper()
	seen := map[string]bool{}
	var lso, hw int64
	active := map[int64]bool{}
	var aborted []kmsg.FetchResponseTopicPartitionAbortedTransaction
	for offset := int64(0); ; {
		f := fetchCommitted(t, c, "txstorm", partition, offset)
		require.Equal(t, codeNone, f.ErrorCode)
		lso, hw = f.LastStableOffset, f.HighWatermark
		// Kafka orders them by marker; a consumer walks them by first
		// offset, as the Java client's priority queue does.
		aborted = append(aborted, f.AbortedTransactions...)
		slices.SortStableFunc(aborted, func(a, b kmsg.FetchResponseTopicPartitionAbortedTransaction) int {
			return cmp.Compare(a.FirstOffset, b.FirstOffset)
		})
		if len(f.RecordBatches) == 0 {
			break
		}
		for raw := f.RecordBatches; len(raw) > 0; {
			var b kmsg.RecordBatch
			require.NoError(t, b.ReadFrom(raw))
			raw = raw[12+int(b.Length):]
			last := b.FirstOffset + int64(b.LastOffsetDelta)
			offset = last + 1
			for len(aborted) > 0 && aborted[0].FirstOffset <= last {
				active[aborted[0].ProducerID] = true
				aborted = aborted[1:]
			}
			if b.Attributes&0x20 != 0 { // a marker ends the producer's aborted transaction
				delete(active, b.ProducerID)
				continue
			}
			if b.Attributes&0x10 != 0 && active[b.ProducerID] {
				continue
			}
			var rec kmsg.Record
			require.NoError(t, rec.ReadFrom(b.Records))
			v := string(rec.Value)
			seen[v[:strings.LastIndexByte(v[:strings.LastIndexByte(v, '-')], '-')]] = true
		}
	}
	return seen, lso, hw
}

// checkTxnStorm checks what a restarted broker serves against what the
// producers were told.
func checkTxnStorm(t *testing.T, c *wireclient.Client, producers []*txnStormProducer) (committed, aborted, unknownSeen int) {
	t.Helper()
	var parts []map[string]bool
	for part := range int32(txnStormPartitions) {
		seen, lso, hw := committedValues(t, c, part)
		require.Equal(t, hw, lso, "txstorm-%d: no transaction is left open after the restart", part)
		parts = append(parts, seen)
	}
	offs := map[int32]int64{}
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Version, req.Group, req.RequireStable = 7, "txg", true
	req.Topics = []kmsg.OffsetFetchRequestTopic{{Topic: "txsrc", Partitions: []int32{0, 1, 2}}}
	for _, p := range wiretest.Do[*kmsg.OffsetFetchResponse](t, c, req).Topics[0].Partitions {
		require.Equal(t, codeNone, p.ErrorCode, "no staged offsets survive a restart")
		offs[p.Partition] = p.Offset
	}
	for _, sp := range producers {
		last := int64(-1)
		for k := range sp.next {
			key := fmt.Sprintf("p%d-t%d", sp.id, k)
			in0, in1 := parts[0][key], parts[1][key]
			require.Equal(t, in0, in1, "%s: half visible", key)
			switch sp.outcomes[k] {
			case txnCommitted:
				require.True(t, in0, "%s: an answered commit is visible", key)
				committed++
			case txnAborted:
				require.False(t, in0, "%s: an answered abort is invisible", key)
				aborted++
			default:
				if in0 {
					unknownSeen++
				}
			}
			if in0 {
				last = int64(k)
			}
		}
		require.Equal(t, last, offs[int32(sp.id)], "storm-%d: the offset is the last visible transaction's", sp.id)
	}
	return committed, aborted, unknownSeen
}

func TestCrashKillDuringTransactionStorm(t *testing.T) {
	t.Parallel()
	const rounds = 3
	dir := t.TempDir()
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 3))
	args := []string{"--data-dir", dir, "--topic", fmt.Sprintf("txstorm:%d", txnStormPartitions),
		"--topic", fmt.Sprintf("txsrc:%d", txnStormProducers), "--log-level", "info"}
	producers := make([]*txnStormProducer, txnStormProducers)
	for i := range producers {
		producers[i] = &txnStormProducer{id: i, outcomes: map[int]txnOutcome{}, rng: rand.New(rand.NewPCG(uint64(seed), uint64(i)))}
	}
	var mu sync.Mutex
	var total atomic.Int64
	for round := 0; round <= rounds; round++ {
		p := startProcess(t, args...)
		c := wiretest.Dial(t, p.Addr, "process-test")
		mu.Lock()
		committed, aborted, unknown := checkTxnStorm(t, c, producers)
		mu.Unlock()
		t.Logf("round %d: %d answered commits visible, %d answered aborts invisible, %d unanswered seen committed", round, committed, aborted, unknown)
		if round == rounds {
			break
		}
		var wg sync.WaitGroup
		before := total.Load()
		for _, sp := range producers {
			conn := wiretest.Dial(t, p.Addr, "process-test")
			wg.Go(func() { sp.runTxns(t, conn, &mu, &total) })
		}
		wait := int64(10 + rng.IntN(60))
		eventually(t, func() bool { return total.Load()-before >= wait }, "the storm gets going")
		require.Equal(t, -1, p.signal(t, syscall.SIGKILL, waitTimeout), "killed, not exited")
		wg.Wait()
		t.Logf("round %d: killed after %d answered transactions", round, total.Load()-before)
	}
}
