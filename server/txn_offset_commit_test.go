package server

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestTxnOffsetCommitStagesUntilEndTxn(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	j := e.join("c", "g", "", "orders")
	pid, epoch := e.txnInit("tx")
	aoReq := kmsg.NewPtrAddOffsetsToTxnRequest()
	aoReq.Version, aoReq.TransactionalID, aoReq.ProducerID, aoReq.ProducerEpoch, aoReq.Group = 3, "tx", pid, epoch, "g"
	require.Zero(t, call[*kmsg.AddOffsetsToTxnResponse](e, "p", aoReq).ErrorCode)
	commit := func(version int16, gen int32, partition int32) int16 {
		req := kmsg.NewPtrTxnOffsetCommitRequest()
		req.Version, req.TransactionalID, req.ProducerID, req.ProducerEpoch = version, "tx", pid, epoch
		req.Group, req.MemberID, req.Generation = "g", j.MemberID, gen
		req.Topics = []kmsg.TxnOffsetCommitRequestTopic{{Topic: "orders", Partitions: []kmsg.TxnOffsetCommitRequestTopicPartition{{Partition: partition, Offset: 7, LeaderEpoch: -1}}}}
		resp := call[*kmsg.TxnOffsetCommitResponse](e, "p", req)
		return resp.Topics[0].Partitions[0].ErrorCode
	}
	require.Equal(t, kerr.IllegalGeneration.Code, commit(3, j.Generation+1, 0))
	require.Equal(t, int16(0), commit(0, 99, 1), "v0-2 name no member: not fenced")
	require.Equal(t, kerr.UnknownTopicOrPartition.Code, commit(0, 99, 9), "as a direct commit: the partition must exist")
	require.Equal(t, int16(0), commit(3, j.Generation, 2))

	fetch := func() kmsg.OffsetFetchResponseTopicPartition {
		req := kmsg.NewPtrOffsetFetchRequest()
		req.Version, req.Group, req.RequireStable = 7, "g", true
		req.Topics = []kmsg.OffsetFetchRequestTopic{{Topic: "orders", Partitions: []int32{2}}}
		return call[*kmsg.OffsetFetchResponse](e, "c", req).Topics[0].Partitions[0]
	}
	require.Equal(t, kerr.UnstableOffsetCommit.Code, fetch().ErrorCode)
	end := kmsg.NewPtrEndTxnRequest()
	end.Version, end.TransactionalID, end.ProducerID, end.ProducerEpoch, end.Commit = 3, "tx", pid, epoch, true
	require.Zero(t, call[*kmsg.EndTxnResponse](e, "p", end).ErrorCode)
	got := fetch()
	require.Zero(t, got.ErrorCode)
	require.Equal(t, int64(7), got.Offset)
}

// TestTxnOffsetCommitFencedInstance: a TxnOffsetCommit v3 is asked "who
// are you?" first, as an OffsetCommit is: the replaced run of static
// member a, naming its instance, is FENCED_INSTANCE_ID; without the
// instance id it is an unknown member; the current run's commit is
// staged. Nothing the fenced ones sent is staged.
func TestTxnOffsetCommitFencedInstance(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	old, current := e.staticRestart("g")
	pid, epoch := e.txnInit("tx")
	aoReq := kmsg.NewPtrAddOffsetsToTxnRequest()
	aoReq.Version, aoReq.TransactionalID, aoReq.ProducerID, aoReq.ProducerEpoch, aoReq.Group = 3, "tx", pid, epoch, "g"
	require.Zero(t, call[*kmsg.AddOffsetsToTxnResponse](e, "p", aoReq).ErrorCode)
	a := "a"
	commit := func(member string, instance *string) int16 {
		req := kmsg.NewPtrTxnOffsetCommitRequest()
		req.Version, req.TransactionalID, req.ProducerID, req.ProducerEpoch = 3, "tx", pid, epoch
		req.Group, req.MemberID, req.InstanceID, req.Generation = "g", member, instance, 1
		req.Topics = []kmsg.TxnOffsetCommitRequestTopic{{Topic: "orders", Partitions: []kmsg.TxnOffsetCommitRequestTopicPartition{{Partition: 0, Offset: 7, LeaderEpoch: -1}}}}
		return call[*kmsg.TxnOffsetCommitResponse](e, "p", req).Topics[0].Partitions[0].ErrorCode
	}
	fetch := func() int16 {
		req := kmsg.NewPtrOffsetFetchRequest()
		req.Version, req.Group, req.RequireStable = 7, "g", true
		req.Topics = []kmsg.OffsetFetchRequestTopic{{Topic: "orders", Partitions: []int32{0}}}
		return call[*kmsg.OffsetFetchResponse](e, "c", req).Topics[0].Partitions[0].ErrorCode
	}
	require.Equal(t, kerr.FencedInstanceID.Code, commit(old, &a))
	require.Equal(t, kerr.UnknownMemberID.Code, commit(old, nil))
	require.Zero(t, fetch(), "nothing staged for partition 0")
	require.Zero(t, commit(current, &a))
	require.Equal(t, kerr.UnstableOffsetCommit.Code, fetch(), "the current run's offset is staged")
}
