package integration

import (
	"encoding/binary"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/testkit/wiretest"
	"github.com/minibroker/minibroker/wireclient"
)

// Kafka's transactional codes, as the wire tests compare them.
var (
	codeProducerFenced        = kerr.ProducerFenced.Code
	codeInvalidTxnState       = kerr.InvalidTxnState.Code
	codeInvalidPIDMapping     = kerr.InvalidProducerIDMapping.Code
	codeInvalidTxnTimeout     = kerr.InvalidTransactionTimeout.Code
	codeOperationNotAttempted = kerr.OperationNotAttempted.Code
	codeUnstableOffsetCommit  = kerr.UnstableOffsetCommit.Code
	codeTxnIDAuthFailed       = kerr.TransactionalIDAuthorizationFailed.Code
	codeStaleMemberEpoch      = kerr.StaleMemberEpoch.Code
)

// txnProducer is a transactional id's producer id and epoch.
type txnProducer struct {
	id    string
	pid   int64
	epoch int16
}

// initTxn sends InitProducerId v4 for id with timeout and returns the
// answer's code and producer.
func initTxn(t *testing.T, c *wireclient.Client, id string, timeout time.Duration) (int16, txnProducer) {
	t.Helper()
	req := kmsg.NewPtrInitProducerIDRequest()
	req.Version, req.TransactionalID, req.TransactionTimeoutMillis = 4, &id, int32(timeout/time.Millisecond)
	resp := wiretest.Do[*kmsg.InitProducerIDResponse](t, c, req)
	return resp.ErrorCode, txnProducer{id: id, pid: resp.ProducerID, epoch: resp.ProducerEpoch}
}

// mustInitTxn is initTxn requiring success, with a one-minute timeout.
func mustInitTxn(t *testing.T, c *wireclient.Client, id string) txnProducer {
	t.Helper()
	code, p := initTxn(t, c, id, time.Minute)
	require.Equal(t, codeNone, code)
	return p
}

// addPartitions sends AddPartitionsToTxn at version and returns every
// partition's code in request order.
func addPartitions(t *testing.T, c *wireclient.Client, version int16, p txnProducer, topic string, partitions ...int32) []int16 {
	t.Helper()
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	req.Version, req.TransactionalID, req.ProducerID, req.ProducerEpoch = version, p.id, p.pid, p.epoch
	req.Topics = []kmsg.AddPartitionsToTxnRequestTopic{{Topic: topic, Partitions: partitions}}
	resp := wiretest.Do[*kmsg.AddPartitionsToTxnResponse](t, c, req)
	require.Len(t, resp.Topics, 1)
	var codes []int16
	for _, rp := range resp.Topics[0].Partitions {
		codes = append(codes, rp.ErrorCode)
	}
	require.Len(t, codes, len(partitions))
	return codes
}

func addOffsets(t *testing.T, c *wireclient.Client, version int16, p txnProducer, group string) int16 {
	t.Helper()
	req := kmsg.NewPtrAddOffsetsToTxnRequest()
	req.Version, req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Group = version, p.id, p.pid, p.epoch, group
	return wiretest.Do[*kmsg.AddOffsetsToTxnResponse](t, c, req).ErrorCode
}

func endTxn(t *testing.T, c *wireclient.Client, version int16, p txnProducer, commit bool) int16 {
	t.Helper()
	req := kmsg.NewPtrEndTxnRequest()
	req.Version, req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = version, p.id, p.pid, p.epoch, commit
	return wiretest.Do[*kmsg.EndTxnResponse](t, c, req).ErrorCode
}

// txnCommit sends TxnOffsetCommit v3 for the group member's generation
// and returns every partition's code.
func txnCommit(t *testing.T, c *wireclient.Client, p txnProducer, group, member string, generation int32, parts ...tp) []int16 {
	t.Helper()
	req := kmsg.NewPtrTxnOffsetCommitRequest()
	req.Version, req.TransactionalID, req.ProducerID, req.ProducerEpoch = 3, p.id, p.pid, p.epoch
	req.Group, req.MemberID, req.Generation = group, member, generation
	for _, q := range parts {
		n := len(req.Topics)
		if n == 0 || req.Topics[n-1].Topic != q.topic {
			req.Topics = append(req.Topics, kmsg.TxnOffsetCommitRequestTopic{Topic: q.topic})
			n++
		}
		rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset = q.partition, q.offset
		req.Topics[n-1].Partitions = append(req.Topics[n-1].Partitions, rp)
	}
	resp := wiretest.Do[*kmsg.TxnOffsetCommitResponse](t, c, req)
	var codes []int16
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			codes = append(codes, rp.ErrorCode)
		}
	}
	require.Len(t, codes, len(parts))
	return codes
}

// txnBatch is idempotentBatch with the transactional attribute.
func txnBatch(p txnProducer, seq int32, values ...string) []byte {
	return edited(idempotentBatch(p.pid, p.epoch, seq, values...), func(b []byte) {
		binary.BigEndian.PutUint16(b[batchOffAttributes:], 0x10)
	})
}

// produceTxn produces a transactional batch (Produce v9 naming id) and
// returns the partition's answer.
func produceTxn(t *testing.T, c *wireclient.Client, id *string, topic string, partition int32, batch []byte) kmsg.ProduceResponseTopicPartition {
	t.Helper()
	req := produceRequest(9, -1, topic, partBatch{partition, batch})
	req.TransactionID = id
	return produceOne(t, c, req)
}

// fetchCommitted fetches one partition at read_committed (Fetch v12).
func fetchCommitted(t *testing.T, c *wireclient.Client, topic string, partition int32, offset int64) kmsg.FetchResponseTopicPartition {
	t.Helper()
	req := fetchRequest(12, 0, fetchAt{topic, partition, offset})
	req.IsolationLevel = 1
	req.MinBytes = 0
	for _, p := range fetchPartitions(t, c, req) {
		return p
	}
	t.Fatal("no partition answered")
	return kmsg.FetchResponseTopicPartition{}
}

// groupMember joins a one-member classic group on topics and returns its
// member id and generation.
func groupMember(t *testing.T, c *wireclient.Client, group string, topics ...string) (string, int32) {
	t.Helper()
	j := join(t, c, group, topics...)
	assignment(t, c, group, j.MemberID, j.Generation)
	return j.MemberID, j.Generation
}

// offsetFetchStable asks OffsetFetch v7 with RequireStable for parts and
// returns "topic-partition" -> {offset, code}.
func offsetFetchStable(t *testing.T, c *wireclient.Client, group string, parts ...tp) map[string][2]int64 {
	t.Helper()
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Version, req.Group, req.RequireStable = 7, group, true
	for _, p := range parts {
		n := len(req.Topics)
		if n == 0 || req.Topics[n-1].Topic != p.topic {
			req.Topics = append(req.Topics, kmsg.OffsetFetchRequestTopic{Topic: p.topic})
			n++
		}
		req.Topics[n-1].Partitions = append(req.Topics[n-1].Partitions, p.partition)
	}
	resp := wiretest.Do[*kmsg.OffsetFetchResponse](t, c, req)
	out := map[string][2]int64{}
	for _, rt := range resp.Topics {
		for _, p := range rt.Partitions {
			out[fmt.Sprintf("%s-%d", rt.Topic, p.Partition)] = [2]int64{p.Offset, int64(p.ErrorCode)}
		}
	}
	return out
}
