package compare

// A transaction's life beside kfake: InitProducerId over an open
// transaction, what follows an answered EndTxn, the transaction timeout
// and its bounds, and a transactional batch in a produce that names no
// transactional id.

import (
	"context"
	"fmt"
	"strings"

	"github.com/minibroker/minibroker/tools/lab"
)

// txnInitAbortsOpen: a transaction writes one record (offset 0) and stays
// open; a second producer initializes the same transactional id. Its
// epoch, then the partition as read_uncommitted and read_committed
// Fetches see it.
func txnInitAbortsOpen(ctx context.Context, s *Script) (string, error) {
	tp := lab.TP(s.group, 0)
	first, err := s.txnProducer(ctx, "reinit")
	if err != nil {
		return "", err
	}
	if err := first.begin(ctx, tp); err != nil {
		return "", err
	}
	if err := wantNone("Produce")(first.produce(ctx, tp, "open")); err != nil {
		return "", err
	}
	second, err := s.txnProducer(ctx, "reinit")
	if err != nil {
		return "", err
	}
	all, err := readLog(ctx, second.conn, tp, 0, readUncommitted)
	if err != nil {
		return "", err
	}
	var marker string
	for _, b := range all.batches {
		if b.Attributes&attrControl != 0 && b.ProducerID == first.pid {
			marker = fmt.Sprintf(", the marker at epoch %+d", b.ProducerEpoch-first.epoch)
		}
	}
	committed, err := readLog(ctx, second.conn, tp, 0, readCommitted)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("epoch %+d, same producer id %v; log %s%s; read_committed aborted %s, last stable %d",
		second.epoch-first.epoch, second.pid == first.pid, batchWords(all.batches), marker,
		abortedWords(first, committed.aborted), committed.lastStable), nil
}

// txnConcurrent: the requests Kafka may answer CONCURRENT_TRANSACTIONS
// while a transaction completes, sent right after EndTxn commit is
// answered: AddPartitionsToTxn (a new transaction), EndTxn abort (of
// that one), InitProducerId.
func txnConcurrent(ctx context.Context, s *Script) (string, error) {
	tp := lab.TP(s.group, 0)
	p, err := s.txnProducer(ctx, "concurrent")
	if err != nil {
		return "", err
	}
	if err := p.begin(ctx, tp); err != nil {
		return "", err
	}
	if err := wantNone("Produce")(p.produce(ctx, tp, "committed")); err != nil {
		return "", err
	}
	if err := wantNone("EndTxn commit")(p.end(ctx, true)); err != nil {
		return "", err
	}
	add, err := p.addPartition(ctx, 3, p.pid, p.epoch, tp)
	if err != nil {
		return "", err
	}
	abort, err := p.end(ctx, false)
	if err != nil {
		return "", err
	}
	epoch := p.epoch
	init, err := p.initWith(ctx, txnTimeoutMillis, -1, -1)
	if err != nil {
		return "", err
	}
	r, err := readLog(ctx, p.conn, tp, 0, readUncommitted)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("after EndTxn commit: AddPartitionsToTxn %s, EndTxn abort %s, InitProducerId %s epoch %+d; log %s",
		add, abort, init, p.epoch-epoch, batchWords(r.batches)), nil
}

// txnTimeoutMillisShort is the txn-timeout scenario's transaction
// timeout, short for the scenario to stay fast. Both brokers count it
// from the transaction's first add, the scenario's last request before
// it polls, so a slow machine cannot make it expire early.
const txnTimeoutMillisShort = 200

// txnTimeout: a transaction of a 200 ms timeout adds a partition and is
// left alone; the scenario polls the partition's log end until the
// broker writes a marker there, then reads it, and the producer tries
// EndTxn commit at its epoch and InitProducerId naming that epoch
// (KIP-588). The marker can be in the log before the abort is complete
// (Kafka's PrepareAbort, until the markers are written and the completion
// is logged); an InitProducerId then gets CONCURRENT_TRANSACTIONS, which
// clients retry, and so does the scenario.
func txnTimeout(ctx context.Context, s *Script) (string, error) {
	tp := lab.TP(s.group, 0)
	// The first InitProducerId sets the timeout: kfake keeps the timeout
	// of an id's first one (pids.create).
	p, err := s.txnProducerWith(ctx, "timeout", txnTimeoutMillisShort)
	if err != nil {
		return "", err
	}
	if err := p.begin(ctx, tp); err != nil {
		return "", err
	}
	for {
		end, err := listLatest(ctx, p.conn, tp, readUncommitted)
		if err != nil {
			return "", err
		}
		if end > 0 {
			break
		}
		if err := pause(ctx); err != nil {
			return "", fmt.Errorf("no marker after the transaction timeout: %w", err)
		}
	}
	r, err := readLog(ctx, p.conn, tp, 0, readUncommitted)
	if err != nil {
		return "", err
	}
	words := []string{"log " + batchWords(r.batches)}
	for _, b := range r.batches {
		if b.Attributes&attrControl != 0 && b.ProducerID == p.pid {
			words[0] += fmt.Sprintf(" at epoch %+d", b.ProducerEpoch-p.epoch)
		}
	}
	commit, err := p.end(ctx, true)
	if err != nil {
		return "", err
	}
	epoch := p.epoch
	init, err := p.initWith(ctx, txnTimeoutMillis, p.pid, p.epoch)
	for err == nil && init == "CONCURRENT_TRANSACTIONS" {
		if err = pause(ctx); err == nil {
			init, err = p.initWith(ctx, txnTimeoutMillis, p.pid, p.epoch)
		}
	}
	if err != nil {
		return "", err
	}
	words = append(words, "EndTxn commit "+commit, fmt.Sprintf("InitProducerId from that epoch %s epoch %+d", init, p.epoch-epoch))
	return strings.Join(words, "; "), nil
}

// txnTimeoutMax: InitProducerId with transaction timeouts of 0, -1, 15
// minutes and 15 minutes and 1 ms, against both brokers' default maximum
// (15 minutes).
func txnTimeoutMax(ctx context.Context, s *Script) (string, error) {
	p, err := s.txnProducer(ctx, "timeout-max")
	if err != nil {
		return "", err
	}
	var words []string
	for _, ms := range []int32{0, -1, 900000, 900001} {
		code, err := p.initWith(ctx, ms, -1, -1)
		if err != nil {
			return "", err
		}
		words = append(words, fmt.Sprintf("%d %s", ms, code))
	}
	return strings.Join(words, ", "), nil
}

// txnProduceNoID: inside a transaction on the record topic, a
// transactional batch of the producer's in a Produce that names no
// transactional id, then a transactional batch with no producer id in a
// Produce that names it; then the partition's log end.
func txnProduceNoID(ctx context.Context, s *Script) (string, error) {
	tp := lab.TP(s.group, 0)
	p, err := s.txnProducer(ctx, "no-id")
	if err != nil {
		return "", err
	}
	if err := p.begin(ctx, tp); err != nil {
		return "", err
	}
	noID, err := p.produceAs(ctx, nil, p.pid, tp, "no transactional id")
	if err != nil {
		return "", err
	}
	noPID, err := p.produceAs(ctx, &p.id, -1, tp, "no producer id")
	if err != nil {
		return "", err
	}
	end, err := listLatest(ctx, p.conn, tp, readUncommitted)
	if err != nil {
		return "", err
	}
	if err := wantNone("EndTxn abort")(p.end(ctx, false)); err != nil {
		return "", err
	}
	return fmt.Sprintf("no transactional id %s, no producer id %s; log end %d", noID, noPID, end), nil
}
