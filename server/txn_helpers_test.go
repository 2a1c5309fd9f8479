package server

import (
	"encoding/binary"
	"hash/crc32"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/records"
)

// txnInit gives transactional id its producer id and epoch.
func (e *env) txnInit(id string) (int64, int16) {
	e.t.Helper()
	resp := call[*kmsg.InitProducerIDResponse](e, "p", &kmsg.InitProducerIDRequest{Version: 4, TransactionalID: &id,
		TransactionTimeoutMillis: 60000, ProducerID: -1, ProducerEpoch: -1})
	require.Zero(e.t, resp.ErrorCode)
	return resp.ProducerID, resp.ProducerEpoch
}

// txnAdd adds topic's partitions to id's transaction at version 3 and
// returns their codes.
func (e *env) txnAdd(id string, pid int64, epoch int16, topic string, parts ...int32) []int16 {
	e.t.Helper()
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	req.Version, req.TransactionalID, req.ProducerID, req.ProducerEpoch = 3, id, pid, epoch
	req.Topics = []kmsg.AddPartitionsToTxnRequestTopic{{Topic: topic, Partitions: parts}}
	resp := call[*kmsg.AddPartitionsToTxnResponse](e, "p", req)
	var codes []int16
	for _, rp := range resp.Topics[0].Partitions {
		codes = append(codes, rp.ErrorCode)
	}
	return codes
}

// txnBatch is a transactional batch of values from pid at epoch.
func txnBatch(pid int64, epoch int16, seq int32, values ...string) []byte {
	spec := records.BatchSpec{Idempotent: true, ProducerID: pid, ProducerEpoch: epoch, BaseSequence: seq}
	for _, v := range values {
		spec.Records = append(spec.Records, records.Record{Value: []byte(v)})
	}
	raw := records.EncodeBatch(spec)
	binary.BigEndian.PutUint16(raw[21:], 0x10)
	binary.BigEndian.PutUint32(raw[17:], crc32.Checksum(raw[21:], crc32.MakeTable(crc32.Castagnoli)))
	return raw
}

func TestTxnBatchIsTransactional(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	b, err := e.log.Validate(txnBatch(3, 1, 0, "x"))
	require.NoError(t, err)
	require.True(t, b.Transactional())
	pid, epoch := b.Producer()
	require.Equal(t, [2]int64{3, 1}, [2]int64{pid, int64(epoch)})
}
