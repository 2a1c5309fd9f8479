package compare

// The transaction admin APIs (DescribeTransactions, ListTransactions)
// against an open transaction: what each broker says of it.

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/tools/lab"
)

// txnDescribeList: a transaction open on one partition, described with
// an id nobody holds beside it, then listed with a state filter that
// names one state and one name that is no state.
func txnDescribeList(ctx context.Context, s *Script) (string, error) {
	p, err := s.txnProducer(ctx, "described")
	if err != nil {
		return "", err
	}
	code, err := p.addPartition(ctx, 3, p.pid, p.epoch, lab.TP(s.group, 0))
	if err != nil {
		return "", err
	}
	if code != "NONE" {
		return "", fmt.Errorf("AddPartitionsToTxn answered %s", code)
	}
	dreq := kmsg.NewPtrDescribeTransactionsRequest()
	dreq.TransactionalIDs = []string{p.id, p.id + "-nobody"}
	dresp, err := lab.Request[*kmsg.DescribeTransactionsResponse](ctx, p.conn, dreq)
	if err != nil {
		return "", err
	}
	if len(dresp.TransactionStates) != 2 {
		return "", fmt.Errorf("DescribeTransactions answered %d ids for 2", len(dresp.TransactionStates))
	}
	d, unknown := dresp.TransactionStates[0], dresp.TransactionStates[1]
	parts := 0
	for _, t := range d.Topics {
		parts += len(t.Partitions)
	}
	lreq := kmsg.NewPtrListTransactionsRequest()
	lreq.Version, lreq.StateFilters, lreq.ProducerIDFilters = 1, []string{"Ongoing", "Sleeping"}, []int64{p.pid}
	lresp, err := lab.Request[*kmsg.ListTransactionsResponse](ctx, p.conn, lreq)
	if err != nil {
		return "", err
	}
	var listed []string
	for _, l := range lresp.TransactionStates {
		who := "another id"
		if l.TransactionalID == p.id {
			who = "it"
		}
		listed = append(listed, who+" "+l.TransactionState)
	}
	if _, err := p.end(ctx, false); err != nil {
		return "", err
	}
	return fmt.Sprintf("describe %s %s, %d partition, pid matches %v; unknown id %s; list %s %v, unknown states %v",
		lab.CodeName(d.ErrorCode), d.State, parts, d.ProducerID == p.pid, lab.CodeName(unknown.ErrorCode),
		lab.CodeName(lresp.ErrorCode), listed, lresp.UnknownStateFilters), nil
}
