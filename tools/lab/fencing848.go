package lab

import (
	"context"
	"fmt"
	"io"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/minibroker/minibroker/assignor"
)

// Fencing848 runs the chapter's fencing exercises over the consumer
// protocol (KIP-848) against the broker at addr, in group. In the window
// after member 2 joined, member 1 commits every partition it still
// believes it owns, at its own current epoch, and the ownership check
// rejects the whole commit (REBALANCE_IN_PROGRESS). Once its heartbeat has
// moved it on, a heartbeat at its old epoch is fenced
// (FENCED_MEMBER_EPOCH), and so is a commit at its old epoch
// (STALE_MEMBER_EPOCH). It recovers as a fenced client does: it re-joins
// at epoch 0 under its own id, gets its whole assignment back, and commits.
//
// It writes each step with its requests and answers to w and checks every
// answer against minibroker's rules.
func Fencing848(ctx context.Context, w io.Writer, addr, group, orders string) error {
	first, second, done, err := startConsumerLab(ctx, w, addr, group, orders, "lab fencing-848: the fencing exercises")
	if err != nil {
		return err
	}
	defer done()

	heading(w, "Setup. Member 1 joins alone, then member 2 joins.")
	if err := expectConsumerJoin(ctx, first, 1); err != nil {
		return err
	}
	if err := expectConsumerJoin(ctx, second, 2); err != nil {
		return err
	}
	fmt.Fprintf(w, "  member 1: %s\n", consumerView(first))
	fmt.Fprintf(w, "  member 2: %s\n", consumerView(second))

	all := []assignor.TopicPartition{TP(orders, 0), TP(orders, 1), TP(orders, 2), TP(orders, 3)}
	positions := make([]PartitionOffset, len(first.Assigned))
	for i, tp := range first.Assigned {
		positions[i] = PartitionOffset{TopicPartition: tp, Offset: 10 + int64(tp.Partition)}
	}

	heading(w, "1. Before its next heartbeat, member 1 commits every partition it believes it owns,\n"+
		"   at its own epoch 1.")
	fmt.Fprintf(w, "  member 1 positions, as if it had polled: %s\n", offsetList(positions))
	if err := expectConsumerCommit(ctx, first, first.Epoch, kerr.RebalanceInProgress.Code, positions...); err != nil {
		return err
	}
	if err := expectConsumerFetch(ctx, first, all, -1, -1, -1, -1); err != nil {
		return err
	}
	fmt.Fprintf(w, "  result: REBALANCE_IN_PROGRESS; nothing was stored. Epoch 1 is member 1's current\n")
	fmt.Fprintf(w, "  epoch: only the ownership check stopped it, since %s-1 and %s-3 are member\n", orders, orders)
	fmt.Fprintf(w, "  2's in the coordinator's current assignment. Kafka has no such check, and needs\n")
	fmt.Fprintf(w, "  none: there member 1 still owns all four until its heartbeat releases them.\n")
	fmt.Fprintf(w, "  The partitions it keeps, at the same epoch:\n")
	kept := positionsOf(positions, []assignor.TopicPartition{TP(orders, 0), TP(orders, 2)})
	if err := expectConsumerCommit(ctx, first, first.Epoch, 0, kept...); err != nil {
		return err
	}
	fmt.Fprintf(w, "  result: NONE.\n")

	heading(w, "2. Member 1's heartbeat moves it to epoch 2. Then a heartbeat at epoch 1 arrives\n"+
		"   (a late duplicate of the first, say).")
	if err := expectConsumerHeartbeat(ctx, first, 0); err != nil {
		return err
	}
	fmt.Fprintf(w, "  member 1: %s\n", consumerView(first))
	if err := expectConsumerHeartbeatAt(ctx, first, 1, kerr.FencedMemberEpoch.Code); err != nil {
		return err
	}
	fmt.Fprintf(w, "  result: FENCED_MEMBER_EPOCH: only the member's current epoch is accepted. Kafka\n")
	fmt.Fprintf(w, "  would accept the previous epoch here, since the partitions the member reports are\n")
	fmt.Fprintf(w, "  a subset of its assignment (the answer that moved it on may have been lost).\n")

	heading(w, "3. Member 1 commits "+orders+"-0 at epoch 1, which is stale now.")
	if err := expectConsumerCommit(ctx, first, 1, kerr.StaleMemberEpoch.Code, PartitionOffset{TopicPartition: TP(orders, 0), Offset: 20}); err != nil {
		return err
	}
	if err := expectConsumerFetch(ctx, first, all[:1], 10); err != nil {
		return err
	}
	fmt.Fprintf(w, "  result: STALE_MEMBER_EPOCH; %s-0 keeps 10. (Kafka 4.3, KIP-1251, would accept\n", orders)
	fmt.Fprintf(w, "  it: member 1 has held %s-0 since epoch 1.)\n", orders)

	heading(w, "4. Recovery. A fenced member gives up its partitions and re-joins at epoch 0 under\n"+
		"   its own id.")
	first.Assigned = nil
	if err := expectConsumerJoin(ctx, first, 2); err != nil {
		return err
	}
	fmt.Fprintf(w, "  member 1: %s\n", consumerView(first))
	fmt.Fprintf(w, "  The re-join of a known member with an unchanged subscription is a refresh: its whole\n")
	fmt.Fprintf(w, "  assignment at the current group epoch, no rebalance. Both members commit what they own:\n")
	if err := expectConsumerCommit(ctx, first, first.Epoch, 0, PartitionOffset{TopicPartition: TP(orders, 0), Offset: 20}, PartitionOffset{TopicPartition: TP(orders, 2), Offset: 22}); err != nil {
		return err
	}
	if err := expectConsumerCommit(ctx, second, second.Epoch, 0, PartitionOffset{TopicPartition: TP(orders, 1), Offset: 21}, PartitionOffset{TopicPartition: TP(orders, 3), Offset: 23}); err != nil {
		return err
	}
	if err := expectConsumerFetch(ctx, first, all, 20, 21, 22, 23); err != nil {
		return err
	}
	fmt.Fprintf(w, "  result: every partition committed by its owner.\n")
	return nil
}

// expectConsumerCommit commits offs as m at epoch and insists that every
// partition carries want.
func expectConsumerCommit(ctx context.Context, m *ConsumerMember, epoch int32, want int16, offs ...PartitionOffset) error {
	codes, err := m.Commit(ctx, epoch, offs...)
	if err != nil {
		return err
	}
	if got, ok := OneCode(codes); !ok || got != want || len(codes) != len(offs) {
		return fmt.Errorf("lab: OffsetCommit of %s at epoch %d answered %v, want %s on %d partitions", m.ID(), epoch, codes, CodeName(want), len(offs))
	}
	return nil
}

// expectConsumerFetch fetches parts and insists on the committed offsets.
func expectConsumerFetch(ctx context.Context, m *ConsumerMember, parts []assignor.TopicPartition, want ...int64) error {
	code, got, err := m.Fetch(ctx, parts...)
	if err != nil {
		return err
	}
	return checkFetch(code, got, parts, want)
}
