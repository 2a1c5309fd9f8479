package integration

// Zombies and the last stable offset over raw kmsg requests: an
// InitProducerId naming an epoch a newer instance replaced (KIP-360), a
// non-transactional batch carrying another producer's id during its
// transaction, and the last stable offset once DeleteRecords passes an
// open transaction's first record.

import (
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/records"
	"github.com/minibroker/minibroker/testkit/wiretest"
	"github.com/minibroker/minibroker/wireclient"
)

// initTxnExpect sends InitProducerId v4 for id naming the producer id
// and epoch it holds (KIP-360) and returns the code and the answer.
func initTxnExpect(t *testing.T, c *wireclient.Client, p txnProducer) (int16, txnProducer) {
	t.Helper()
	req := kmsg.NewPtrInitProducerIDRequest()
	req.Version, req.TransactionalID, req.TransactionTimeoutMillis = 4, &p.id, 60_000
	req.ProducerID, req.ProducerEpoch = p.pid, p.epoch
	resp := wiretest.Do[*kmsg.InitProducerIDResponse](t, c, req)
	return resp.ErrorCode, txnProducer{id: p.id, pid: resp.ProducerID, epoch: resp.ProducerEpoch}
}

// readCommittedValues reads a partition at read_committed from offset and
// returns the values a read_committed consumer keeps: control batches and
// the batches of aborted transactions dropped.
func readCommittedValues(t *testing.T, c *wireclient.Client, topic string, partition int32, offset int64) []string {
	t.Helper()
	f := fetchCommitted(t, c, topic, partition, offset)
	require.Equal(t, codeNone, f.ErrorCode)
	aborted := map[int64]int64{}
	for _, a := range f.AbortedTransactions {
		aborted[a.ProducerID] = a.FirstOffset
	}
	var out []string
	for data := f.RecordBatches; len(data) > 0; {
		size := int(binary.BigEndian.Uint32(data[8:])) + 12
		var b kmsg.RecordBatch
		require.NoError(t, b.ReadFrom(data[:size]))
		first, isAborted := aborted[b.ProducerID]
		if b.Attributes&0x20 == 0 && !(b.Attributes&0x10 != 0 && isAborted && b.FirstOffset >= first) {
			recs, err := records.Decode(data[:size])
			require.NoError(t, err)
			for _, r := range recs {
				out = append(out, string(r.Value))
			}
		}
		data = data[size:]
	}
	return out
}

func TestWireTxnInitProducerIDFromAReplacedEpochIsFenced(t *testing.T) {
	b := startBroker(t)
	c := wiretest.Dial(t, b.Addr(), "zombie")
	old := mustInitTxn(t, c, "app")
	// A new instance takes the id over, naming no epoch: the old one's
	// epoch is no longer the id's last (Kafka's prepareIncrementProducerEpoch
	// sets lastProducerEpoch to -1).
	current := mustInitTxn(t, c, "app")
	require.Equal(t, old.epoch+1, current.epoch)
	code, _ := initTxnExpect(t, c, old)
	require.Equal(t, codeProducerFenced, code, "the replaced instance names the epoch the new one replaced")

	// The new instance is not fenced by the attempt: its transaction commits.
	require.Equal(t, []int16{codeNone}, addPartitions(t, c, 3, current, "payments", 0))
	id := "app"
	rp := produceTxn(t, c, &id, "payments", 0, txnBatch(current, 0, "v1"))
	require.Equal(t, codeNone, rp.ErrorCode)
	require.Equal(t, codeNone, endTxn(t, c, 3, current, true))
	require.Equal(t, []string{"v1"}, readCommittedValues(t, c, "payments", 0, 0))

	// The current instance naming its own epoch bumps it (KIP-360), and a
	// retry of that call (naming the epoch just replaced, now the last)
	// gets the same epoch again, without a bump.
	code, bumped := initTxnExpect(t, c, current)
	require.Equal(t, codeNone, code)
	require.Equal(t, [2]int64{current.pid, int64(current.epoch + 1)}, [2]int64{bumped.pid, int64(bumped.epoch)})
	code, retried := initTxnExpect(t, c, current)
	require.Equal(t, codeNone, code)
	require.Equal(t, bumped, retried, "a retry of a bump that succeeded")
	code, _ = initTxnExpect(t, c, old)
	require.Equal(t, codeProducerFenced, code)
}

func TestWireNonTransactionalBatchDuringAnotherProducersTransaction(t *testing.T) {
	b := startBroker(t)
	c := wiretest.Dial(t, b.Addr(), "zombie")
	victim := mustInitTxn(t, c, "victim")
	id := "victim"
	require.Equal(t, []int16{codeNone}, addPartitions(t, c, 3, victim, "payments", 0))
	rp := produceTxn(t, c, &id, "payments", 0, txnBatch(victim, 0, "t0"))
	require.Equal(t, codeNone, rp.ErrorCode)

	// Another client sends an idempotent, non-transactional batch with the
	// victim's producer id and epoch and its next sequence.
	forged := produceOne(t, c, produceRequest(9, -1, "payments", partBatch{0, idempotentBatch(victim.pid, victim.epoch, 1, "forged")}))
	require.Equal(t, codeInvalidTxnState, forged.ErrorCode, "Kafka's ProducerAppendInfo: a non-transactional write during the producer's transaction")
	require.Equal(t, int64(1), listOffset(t, c, 7, "payments", 0, -1).Offset, "nothing of it is stored")

	// The victim's next record, at that sequence, is stored, not answered as a duplicate.
	rp = produceTxn(t, c, &id, "payments", 0, txnBatch(victim, 1, "t1"))
	require.Equal(t, codeNone, rp.ErrorCode)
	require.Equal(t, int64(1), rp.BaseOffset)
	require.Equal(t, codeNone, endTxn(t, c, 3, victim, true))
	require.Equal(t, []string{"t0", "t1"}, readCommittedValues(t, c, "payments", 0, 0), "every acknowledged record, once")
}

func TestWireLastStableOffsetIsNotBelowTheLogStart(t *testing.T) {
	b := startBroker(t)
	c := wiretest.Dial(t, b.Addr(), "lso")
	produceValues(t, c, "payments", 0, "a", "b")
	p := mustInitTxn(t, c, "lso")
	id := "lso"
	require.Equal(t, []int16{codeNone}, addPartitions(t, c, 3, p, "payments", 0))
	rp := produceTxn(t, c, &id, "payments", 0, txnBatch(p, 0, "t"))
	require.Equal(t, codeNone, rp.ErrorCode)
	require.Equal(t, int64(2), rp.BaseOffset, "the open transaction's first record")
	produceValues(t, c, "payments", 0, "c", "d", "e", "f")

	req := kmsg.NewPtrDeleteRecordsRequest()
	req.Version = 2
	req.Topics = []kmsg.DeleteRecordsRequestTopic{{Topic: "payments", Partitions: []kmsg.DeleteRecordsRequestTopicPartition{{Partition: 0, Offset: 7}}}}
	resp := wiretest.Do[*kmsg.DeleteRecordsResponse](t, c, req)
	require.Equal(t, codeNone, resp.Topics[0].Partitions[0].ErrorCode)
	require.Equal(t, int64(7), resp.Topics[0].Partitions[0].LowWatermark)

	f := fetchCommitted(t, c, "payments", 0, 7)
	require.Equal(t, codeNone, f.ErrorCode)
	require.Equal(t, [3]int64{7, 7, 7}, [3]int64{f.LogStartOffset, f.LastStableOffset, f.HighWatermark},
		"log start, last stable offset, high watermark: the open transaction began below the log start (UnifiedLog clamps it)")
	require.Equal(t, int64(7), listCommitted(t, c, "payments", 0).Offset, "ListOffsets read_committed")

	require.Equal(t, codeNone, endTxn(t, c, 3, p, true))
	f = fetchCommitted(t, c, "payments", 0, 7)
	require.Equal(t, [3]int64{7, 8, 8}, [3]int64{f.LogStartOffset, f.LastStableOffset, f.HighWatermark}, "the commit marker took offset 7")
	require.Equal(t, int64(8), listCommitted(t, c, "payments", 0).Offset)
}
