package integration

// Transactions over raw kmsg requests, where the exact codes matter:
// InitProducerId fencing, the coordinator's codes for each API and
// version, transactional produce, TxnOffsetCommit through the chapter's
// checks, RequireStable, read_committed reads and timeouts on the manual
// clock.

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/broker"
	"github.com/minibroker/minibroker/records"
	"github.com/minibroker/minibroker/testkit/wiretest"
	"github.com/minibroker/minibroker/wireclient"
)

func TestWireTxnInitProducerIDFencesOlderEpochs(t *testing.T) {
	b := startBroker(t, func(cfg *broker.Config) { cfg.TransactionMaxTimeout = time.Minute })
	c := wiretest.Dial(t, b.Addr(), "txn")
	first := mustInitTxn(t, c, "tx")
	require.Equal(t, int16(0), first.epoch)
	second := mustInitTxn(t, c, "tx")
	require.Equal(t, first.pid, second.pid, "the same transactional id keeps its producer id")
	require.Equal(t, int16(1), second.epoch)
	other := mustInitTxn(t, c, "tx-other")
	require.NotEqual(t, first.pid, other.pid)

	// Every transactional request of the old epoch is fenced.
	require.Equal(t, []int16{codeInvalidProducerEpoch}, addPartitions(t, c, 1, first, "orders", 0), "v0-1 know no PRODUCER_FENCED")
	require.Equal(t, []int16{codeProducerFenced}, addPartitions(t, c, 3, first, "orders", 0))
	require.Equal(t, codeInvalidProducerEpoch, addOffsets(t, c, 0, first, "g"))
	require.Equal(t, codeProducerFenced, addOffsets(t, c, 3, first, "g"))
	require.Equal(t, codeInvalidProducerEpoch, endTxn(t, c, 1, first, true))
	require.Equal(t, codeProducerFenced, endTxn(t, c, 2, first, true))

	code, _ := initTxn(t, c, "tx", time.Minute+time.Millisecond)
	require.Equal(t, codeInvalidTxnTimeout, code, "over --transaction-max-timeout")
	code, _ = initTxn(t, c, "tx", 0)
	require.Equal(t, codeInvalidTxnTimeout, code)
	code, _ = initTxn(t, c, "", time.Second)
	require.Equal(t, codeInvalidRequest, code, "an empty transactional id")
}

func TestWireTxnCoordinatorCodes(t *testing.T) {
	b := startBroker(t)
	c := wiretest.Dial(t, b.Addr(), "txn")
	p := mustInitTxn(t, c, "codes")
	unknown := txnProducer{id: "never-initialized", pid: p.pid, epoch: p.epoch}
	require.Equal(t, []int16{codeInvalidPIDMapping}, addPartitions(t, c, 3, unknown, "orders", 0))
	wrongPID := txnProducer{id: p.id, pid: p.pid + 100, epoch: p.epoch}
	require.Equal(t, []int16{codeInvalidPIDMapping}, addPartitions(t, c, 3, wrongPID, "orders", 0))
	require.Equal(t, codeInvalidPIDMapping, endTxn(t, c, 3, wrongPID, true))

	require.Equal(t, codeInvalidTxnState, endTxn(t, c, 3, p, false), "EndTxn with no transaction begun")
	require.Equal(t, []int16{codeOperationNotAttempted, codeUnknownTopicOrPartition}, addPartitions(t, c, 3, p, "orders", 0, 99),
		"all or nothing: nothing is added")
	require.Equal(t, codeInvalidTxnState, endTxn(t, c, 3, p, true), "the failed add began nothing")

	require.Equal(t, []int16{codeNone, codeNone}, addPartitions(t, c, 3, p, "orders", 0, 1))
	require.Equal(t, codeNone, endTxn(t, c, 3, p, true))
	require.Equal(t, codeNone, endTxn(t, c, 3, p, true), "a retried EndTxn with the same decision")
	require.Equal(t, codeInvalidTxnState, endTxn(t, c, 3, p, false), "the other decision after a commit")

	// Markers went to both partitions of the transaction, taking offsets.
	for _, part := range []int32{0, 1} {
		lo := listOffset(t, c, 7, "orders", part, -1)
		require.Equal(t, int64(1), lo.Offset, "orders-%d holds the commit marker", part)
	}
}

func TestWireTxnProduce(t *testing.T) {
	b := startBroker(t)
	c := wiretest.Dial(t, b.Addr(), "txn")
	p := mustInitTxn(t, c, "prod")
	id := "prod"

	rp := produceTxn(t, c, &id, "payments", 0, txnBatch(p, 0, "x"))
	require.Equal(t, codeInvalidTxnState, rp.ErrorCode, "payments-0 was not added")
	require.Equal(t, int64(0), listOffset(t, c, 7, "payments", 0, -1).Offset, "nothing stored")

	require.Equal(t, []int16{codeNone}, addPartitions(t, c, 3, p, "payments", 0))
	rp = produceTxn(t, c, nil, "payments", 0, txnBatch(p, 0, "x"))
	require.Equal(t, codeTxnIDAuthFailed, rp.ErrorCode, "a transactional batch without a transactional id")
	rp = produceTxn(t, c, &id, "payments", 0, txnBatch(p, 0, "a", "b"))
	require.Equal(t, codeNone, rp.ErrorCode)
	require.Equal(t, int64(0), rp.BaseOffset)
	stale := txnProducer{id: id, pid: p.pid, epoch: p.epoch - 1}
	rp = produceTxn(t, c, &id, "payments", 0, txnBatch(stale, 2, "z"))
	require.Equal(t, codeInvalidProducerEpoch, rp.ErrorCode)

	// read_committed stops at the open transaction; read_uncommitted does not.
	f := fetchCommitted(t, c, "payments", 0, 0)
	require.Equal(t, int64(2), f.HighWatermark)
	require.Equal(t, int64(0), f.LastStableOffset)
	require.Empty(t, f.RecordBatches)
	require.Equal(t, int64(0), listCommitted(t, c, "payments", 0).Offset, "ListOffsets read_committed answers the LSO")

	require.Equal(t, codeNone, endTxn(t, c, 3, p, false))
	f = fetchCommitted(t, c, "payments", 0, 0)
	require.Equal(t, int64(3), f.HighWatermark, "the abort marker took offset 2")
	require.Equal(t, int64(3), f.LastStableOffset)
	require.Equal(t, []kmsg.FetchResponseTopicPartitionAbortedTransaction{{ProducerID: p.pid, FirstOffset: 0}}, f.AbortedTransactions)
	recs, err := records.Decode(f.RecordBatches)
	require.NoError(t, err)
	var offs []int64
	for _, r := range recs {
		offs = append(offs, r.Offset)
	}
	require.Equal(t, []int64{0, 1, 2}, offs, "the aborted records and the marker are served; the client drops them by the aborted list")
	require.Equal(t, int64(3), listCommitted(t, c, "payments", 0).Offset)
}

// listCommitted is ListOffsets v7 latest at read_committed.
func listCommitted(t *testing.T, c *wireclient.Client, topic string, partition int32) kmsg.ListOffsetsResponseTopicPartition {
	t.Helper()
	req := kmsg.NewPtrListOffsetsRequest()
	req.Version, req.ReplicaID, req.IsolationLevel = 7, -1, 1
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Partition, rp.Timestamp = partition, -1
	req.Topics = []kmsg.ListOffsetsRequestTopic{{Topic: topic, Partitions: []kmsg.ListOffsetsRequestTopicPartition{rp}}}
	resp := wiretest.Do[*kmsg.ListOffsetsResponse](t, c, req)
	return resp.Topics[0].Partitions[0]
}

func TestWireTxnOffsetCommitRunsTheChaptersChecks(t *testing.T) {
	b := startBroker(t)
	c := wiretest.Dial(t, b.Addr(), "txn")
	member, gen := groupMember(t, c, "etl", "payments")
	p := mustInitTxn(t, c, "etl-tx")
	pay := tp{"payments", 0, 5}

	require.Equal(t, []int16{codeInvalidTxnState}, txnCommit(t, c, p, "etl", member, gen, pay), "the group was not added")
	require.Equal(t, codeNone, addOffsets(t, c, 3, p, "etl"))
	require.Equal(t, []int16{codeIllegalGeneration}, txnCommit(t, c, p, "etl", member, gen-1, pay))
	require.Equal(t, []int16{codeUnknownMemberID}, txnCommit(t, c, p, "etl", "ghost", gen, pay))
	require.Equal(t, []int16{codeRebalanceInProgress}, txnCommit(t, c, p, "etl", member, gen, tp{"orders", 0, 1}),
		"a partition the member does not own: the ownership code")
	require.Equal(t, codeNone, addOffsets(t, c, 3, p, "nogroup"))
	require.Equal(t, []int16{codeUnknownMemberID}, txnCommit(t, c, p, "nogroup", member, gen, pay), "an unknown group")
	stale := txnProducer{id: p.id, pid: p.pid, epoch: p.epoch + 1}
	require.Equal(t, []int16{codeProducerFenced}, txnCommit(t, c, stale, "etl", member, gen, pay))

	require.Equal(t, []int16{codeNone}, txnCommit(t, c, p, "etl", member, gen, pay))
	got := offsetFetchStable(t, c, "etl", pay, tp{"orders", 0, 0})
	require.Equal(t, [2]int64{-1, int64(codeUnstableOffsetCommit)}, got["payments-0"], "staged by an open transaction")
	require.Equal(t, [2]int64{-1, 0}, got["orders-0"], "only the partitions with staged offsets are unstable")
	require.Equal(t, map[string]int64{"payments-0": -1}, fetchOffsets(t, c, "etl", pay), "not committed yet")

	require.Equal(t, codeNone, endTxn(t, c, 3, p, true))
	require.Equal(t, map[string]int64{"payments-0": 5}, fetchOffsets(t, c, "etl", pay), "committed with the transaction")
	require.Equal(t, [2]int64{5, 0}, offsetFetchStable(t, c, "etl", pay)["payments-0"])

	// An abort discards what it staged.
	require.Equal(t, codeNone, addOffsets(t, c, 3, p, "etl"))
	require.Equal(t, []int16{codeNone}, txnCommit(t, c, p, "etl", member, gen, tp{"payments", 0, 9}))
	require.Equal(t, codeNone, endTxn(t, c, 3, p, false))
	require.Equal(t, map[string]int64{"payments-0": 5}, fetchOffsets(t, c, "etl", pay))
	require.Equal(t, [2]int64{5, 0}, offsetFetchStable(t, c, "etl", pay)["payments-0"])
}

func TestWireTxnOffsetCommitConsumerProtocolEpochs(t *testing.T) {
	b := startBroker(t)
	c := wiretest.Dial(t, b.Addr(), "txn")
	resp := k848Join(t, c, "k848-etl", "m1", "uniform", "payments")
	epoch := resp.MemberEpoch
	// The member's next heartbeat carries its assignment at the group epoch.
	hb := wiretest.Do[*kmsg.ConsumerGroupHeartbeatResponse](t, c, k848Keepalive("k848-etl", "m1", epoch))
	require.Zero(t, hb.ErrorCode)
	epoch = hb.MemberEpoch
	p := mustInitTxn(t, c, "k848-tx")
	require.Equal(t, codeNone, addOffsets(t, c, 3, p, "k848-etl"))
	pay := tp{"payments", 0, 3}
	require.Equal(t, []int16{codeStaleMemberEpoch}, txnCommit(t, c, p, "k848-etl", "m1", epoch-1, pay), "the member epoch plays the generation")
	require.Equal(t, []int16{codeUnknownMemberID}, txnCommit(t, c, p, "k848-etl", "m2", epoch, pay))
	require.Equal(t, []int16{codeNone}, txnCommit(t, c, p, "k848-etl", "m1", epoch, pay))
	require.Equal(t, codeNone, endTxn(t, c, 3, p, true))
	require.Equal(t, map[string]int64{"payments-0": 3}, fetchOffsets(t, c, "k848-etl", pay))
}

func TestWireTxnTimeoutAbortsOnTheManualClock(t *testing.T) {
	b := startBroker(t)
	c := wiretest.Dial(t, b.Addr(), "txn")
	id := "slow"
	code, p := initTxn(t, c, id, time.Second)
	require.Equal(t, codeNone, code)
	require.Equal(t, []int16{codeNone}, addPartitions(t, c, 3, p, "payments", 0))
	require.Equal(t, codeNone, produceTxn(t, c, &id, "payments", 0, txnBatch(p, 0, "late")).ErrorCode)

	_, err := b.Advance(time.Second)
	require.NoError(t, err)
	b.Expire()
	require.Equal(t, int64(0), fetchCommitted(t, c, "payments", 0, 0).LastStableOffset, "exactly the timeout: not expired (strict)")

	_, err = b.Advance(time.Millisecond)
	require.NoError(t, err)
	b.Expire()
	f := fetchCommitted(t, c, "payments", 0, 0)
	require.Equal(t, int64(2), f.LastStableOffset, "aborted by the expiry step: marker at 1")
	require.Equal(t, []kmsg.FetchResponseTopicPartitionAbortedTransaction{{ProducerID: p.pid, FirstOffset: 0}}, f.AbortedTransactions)

	// The zombie is fenced: the broker bumped the epoch.
	require.Equal(t, codeProducerFenced, endTxn(t, c, 3, p, true))
	require.Equal(t, codeInvalidProducerEpoch, produceTxn(t, c, &id, "payments", 0, txnBatch(p, 1, "more")).ErrorCode)
	views := b.Transactions().Views()
	require.Len(t, views, 1)
	require.Equal(t, p.epoch+1, views[0].Epoch)
	require.Equal(t, "CompleteAbort", views[0].State.String())
	st := b.Transactions().Stats()
	require.Equal(t, int64(1), st.TimedOut)
	require.Equal(t, int64(1), st.Aborted)
}

// init adds the transaction APIs to TestWireEveryAPIAtMinAndMaxVersion:
// each runs a whole transaction with that API at the version tested.
func init() {
	txnCase := func(key kmsg.Key) versionCase {
		return func(t *testing.T, c *wireclient.Client, v int16, name string) {
			p := mustInitTxn(t, c, name)
			addV, offV, endV := int16(3), int16(3), int16(3)
			switch key {
			case kmsg.AddPartitionsToTxn:
				addV = v
			case kmsg.AddOffsetsToTxn:
				offV = v
			case kmsg.EndTxn:
				endV = v
			}
			require.Equal(t, []int16{codeNone}, addPartitions(t, c, addV, p, "payments", 0))
			require.Equal(t, codeNone, addOffsets(t, c, offV, p, name))
			req := kmsg.NewPtrTxnOffsetCommitRequest()
			req.Version, req.TransactionalID, req.ProducerID, req.ProducerEpoch = 3, p.id, p.pid, p.epoch
			if key == kmsg.TxnOffsetCommit {
				req.Version = v
			}
			req.Group, req.Generation = name, -1
			rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
			rp.Partition, rp.Offset = 0, 4
			req.Topics = []kmsg.TxnOffsetCommitRequestTopic{{Topic: "payments", Partitions: []kmsg.TxnOffsetCommitRequestTopicPartition{rp}}}
			resp := wiretest.Do[*kmsg.TxnOffsetCommitResponse](t, c, req)
			require.Equal(t, codeNone, resp.Topics[0].Partitions[0].ErrorCode)
			require.Equal(t, codeNone, endTxn(t, c, endV, p, true))
			require.Equal(t, map[string]int64{"payments-0": 4}, fetchOffsets(t, c, name, tp{"payments", 0, 0}))
		}
	}
	for _, k := range []kmsg.Key{kmsg.AddPartitionsToTxn, kmsg.AddOffsetsToTxn, kmsg.EndTxn, kmsg.TxnOffsetCommit} {
		versionCases[k] = txnCase(k)
	}
}

func TestWireTxnHostileInput(t *testing.T) {
	b := startBroker(t)
	c := wiretest.Dial(t, b.Addr(), "txn")
	p := mustInitTxn(t, c, "hostile")

	// A huge partition list: every partition is answered, nothing added.
	huge := make([]int32, 50_000)
	for i := range huge {
		huge[i] = int32(i)
	}
	codes := addPartitions(t, c, 3, p, "orders", huge...)
	require.Equal(t, []int16{codeOperationNotAttempted, codeOperationNotAttempted, codeOperationNotAttempted, codeOperationNotAttempted}, codes[:4])
	require.Equal(t, repeat(codeUnknownTopicOrPartition, len(huge)-4), codes[4:])
	require.Empty(t, b.Transactions().Views()[0].Partitions)

	// Out of order: EndTxn before anything, a TxnOffsetCommit before
	// AddOffsetsToTxn, an epoch from the future.
	require.Equal(t, codeInvalidTxnState, endTxn(t, c, 3, p, true))
	require.Equal(t, []int16{codeInvalidTxnState}, txnCommit(t, c, p, "g", "", -1, tp{"orders", 0, 1}))
	future := txnProducer{id: p.id, pid: p.pid, epoch: p.epoch + 5}
	require.Equal(t, []int16{codeProducerFenced}, addPartitions(t, c, 3, future, "orders", 0))

	// A producer that disconnects mid-transaction: the transaction holds
	// the LSO until its timeout, then the expiry step aborts it.
	gone := wiretest.Dial(t, b.Addr(), "gone")
	id := "gone"
	code, g := initTxn(t, gone, id, 5*time.Second)
	require.Equal(t, codeNone, code)
	require.Equal(t, []int16{codeNone}, addPartitions(t, gone, 3, g, "payments", 0))
	require.Equal(t, codeNone, produceTxn(t, gone, &id, "payments", 0, txnBatch(g, 0, "orphan")).ErrorCode)
	gone.Close()
	require.Equal(t, int64(0), fetchCommitted(t, c, "payments", 0, 0).LastStableOffset)
	_, err := b.Advance(5*time.Second + time.Millisecond)
	require.NoError(t, err)
	b.Expire()
	f := fetchCommitted(t, c, "payments", 0, 0)
	require.Equal(t, int64(2), f.LastStableOffset, "aborted by its timeout; nothing is left open")
	require.Equal(t, int64(2), f.HighWatermark)
}
