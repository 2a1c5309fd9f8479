package compare

// More transactional rules beside kfake: AddPartitionsToTxn naming a
// partition that does not exist, and TxnOffsetCommit for a group the
// transaction never added.

import (
	"context"
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/tools/lab"
)

// txnAddUnknownPartition: AddPartitionsToTxn v3 for partition 0 of the
// record topic and a partition it does not have, then EndTxn commit
// (INVALID_TXN_STATE if nothing was added, NONE if partition 0 was).
func txnAddUnknownPartition(ctx context.Context, s *Script) (string, error) {
	tp := lab.TP(s.group, 0)
	p, err := s.txnProducer(ctx, "unknown-partition")
	if err != nil {
		return "", err
	}
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	req.Version, req.TransactionalID, req.ProducerID, req.ProducerEpoch = 3, p.id, p.pid, p.epoch
	req.Topics = []kmsg.AddPartitionsToTxnRequestTopic{{Topic: tp.Topic, Partitions: []int32{0, 99}}}
	resp, err := lab.Request[*kmsg.AddPartitionsToTxnResponse](ctx, p.conn, req)
	if err != nil {
		return "", err
	}
	var codes []string
	for _, t := range resp.Topics {
		for _, rp := range t.Partitions {
			codes = append(codes, fmt.Sprintf("%d %s", rp.Partition, lab.CodeName(rp.ErrorCode)))
		}
	}
	end, err := p.end(ctx, true)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%s; EndTxn commit %s", strings.Join(codes, ", "), end), nil
}

// txnOffsetCommitNotAdded: TxnOffsetCommit v3 (no member: a direct
// commit) for a group the transaction never added with AddOffsetsToTxn,
// inside a transaction begun on the record topic.
func txnOffsetCommitNotAdded(ctx context.Context, s *Script) (string, error) {
	tp := lab.TP(s.group, 0)
	p, err := s.txnProducer(ctx, "group-not-added")
	if err != nil {
		return "", err
	}
	code, err := p.addPartition(ctx, 3, p.pid, p.epoch, tp)
	if err != nil {
		return "", err
	}
	if code != "NONE" {
		return "", fmt.Errorf("AddPartitionsToTxn answered %s", code)
	}
	staged, err := p.stage(ctx, s.group+"-never-added", "", -1, tp, 1)
	if err != nil {
		return "", err
	}
	if _, err := p.end(ctx, false); err != nil {
		return "", err
	}
	return "TxnOffsetCommit " + staged, nil
}
