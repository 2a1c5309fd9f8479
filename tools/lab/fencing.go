package lab

import (
	"context"
	"fmt"
	"io"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/minibroker/minibroker/assignor"
)

// Fencing runs the chapter's exercises 2 and 4 against the broker at addr,
// in group. Exercise 2: member 1 commits under the generation it joined
// before member 2 arrived and gets ILLEGAL_GENERATION; after a refresh the
// commit of what it now owns succeeds. Exercise 4: member 1, at the
// current generation, commits a partition member 2 owns and is rejected
// (REBALANCE_IN_PROGRESS on the wire, the coordinator's NotPartitionOwner),
// with nothing stored, not even the partition it does own.
//
// It writes each step with its requests and answers to w and checks every
// answer against minibroker's rules.
func Fencing(ctx context.Context, w io.Writer, addr, group, orders string) error {
	cfg := MemberConfig{Group: group, Topics: []string{orders}, Trace: w}
	first, second, closeBoth, err := dialPair(ctx, addr, cfg)
	if err != nil {
		return err
	}
	defer closeBoth()
	defer leaveQuietly(ctx, second)
	defer leaveQuietly(ctx, first)

	fmt.Fprintf(w, "lab fencing: exercises 2 and 4, group %s, topic %s with 4 partitions\n", group, orders)
	fmt.Fprintf(w, "Each step lists the requests sent (>) and the broker's answers (<).\n")

	heading(w, "Setup. Member 1 joins alone, then member 2 joins.")
	if err := joinAndSync(ctx, first); err != nil {
		return err
	}
	fmt.Fprintf(w, "  member 1: %s (generation %d)\n", Partitions(first.Assigned), first.Generation)
	if err := joinAndSync(ctx, second); err != nil {
		return err
	}
	fmt.Fprintf(w, "  member 2: %s (generation %d)\n", Partitions(second.Assigned), second.Generation)

	all := []assignor.TopicPartition{TP(orders, 0), TP(orders, 1), TP(orders, 2), TP(orders, 3)}
	positions := make([]PartitionOffset, len(first.Assigned))
	for i, tp := range first.Assigned {
		positions[i] = PartitionOffset{TopicPartition: tp, Offset: 10 + int64(tp.Partition)}
	}

	heading(w, "Exercise 2a. Before refreshing, member 1 commits its positions under its old generation.")
	fmt.Fprintf(w, "  member 1 positions, as if it had polled: %s\n", offsetList(positions))
	if err := expectCommit(ctx, first, first.ID, first.Generation, kerr.IllegalGeneration.Code, positions...); err != nil {
		return err
	}
	if err := expectFetch(ctx, first, all, -1, -1, -1, -1); err != nil {
		return err
	}
	fmt.Fprintf(w, "  result: ILLEGAL_GENERATION; nothing was stored.\n")

	heading(w, "Exercise 2b. Member 1 refreshes, then commits the partitions it now owns.")
	if err := joinAndSync(ctx, first); err != nil {
		return err
	}
	fmt.Fprintf(w, "  member 1: %s (generation %d)\n", Partitions(first.Assigned), first.Generation)
	owned := positionsOf(positions, first.Assigned)
	if err := expectCommit(ctx, first, first.ID, first.Generation, 0, owned...); err != nil {
		return err
	}
	if err := expectFetch(ctx, first, all, 10, -1, 12, -1); err != nil {
		return err
	}
	fmt.Fprintf(w, "  result: NONE; the commit is stored.\n")

	heading(w, "Exercise 4. Member 1 is current, but commits "+orders+"-1, which member 2 owns.")
	foreign := PartitionOffset{TopicPartition: TP(orders, 1), Offset: 50}
	if err := expectCommit(ctx, first, first.ID, first.Generation, kerr.RebalanceInProgress.Code, foreign); err != nil {
		return err
	}
	fmt.Fprintf(w, "  Now one partition of its own with one of member 2's, in one commit:\n")
	mixed := []PartitionOffset{{TopicPartition: TP(orders, 0), Offset: 20}, foreign}
	if err := expectCommit(ctx, first, first.ID, first.Generation, kerr.RebalanceInProgress.Code, mixed...); err != nil {
		return err
	}
	if err := expectFetch(ctx, first, all[:2], 10, -1); err != nil {
		return err
	}
	fmt.Fprintf(w, "  result: the whole commit is rejected and nothing is stored; %s-0 keeps 10.\n", orders)
	fmt.Fprintf(w, "  The generation matched: only the ownership check stopped it. Kafka's classic\n")
	fmt.Fprintf(w, "  protocol has no such check and no code for it; minibroker answers REBALANCE_IN_PROGRESS.\n")
	fmt.Fprintf(w, "  Member 2, the owner, commits %s-1:\n", orders)
	if err := expectCommit(ctx, second, second.ID, second.Generation, 0, foreign); err != nil {
		return err
	}
	fmt.Fprintf(w, "  result: NONE.\n")
	return nil
}

// expectCommit commits offs as memberID under generation and insists that
// every partition carries want.
func expectCommit(ctx context.Context, m *Member, memberID string, generation int32, want int16, offs ...PartitionOffset) error {
	codes, err := m.CommitAs(ctx, memberID, generation, offs...)
	if err != nil {
		return err
	}
	if got, ok := OneCode(codes); !ok || got != want || len(codes) != len(offs) {
		return fmt.Errorf("lab: OffsetCommit of %s at generation %d answered %v, want %s on %d partitions", quoteID(memberID), generation, codes, CodeName(want), len(offs))
	}
	return nil
}

// expectFetch fetches parts and insists on the committed offsets.
func expectFetch(ctx context.Context, m *Member, parts []assignor.TopicPartition, want ...int64) error {
	code, got, err := m.Fetch(ctx, parts...)
	if err != nil {
		return err
	}
	return checkFetch(code, got, parts, want)
}

// checkFetch checks an OffsetFetch answer for parts: NONE, and the
// committed offsets want.
func checkFetch(code int16, got []PartitionOffset, parts []assignor.TopicPartition, want []int64) error {
	if code != 0 || len(got) != len(want) {
		return fmt.Errorf("lab: OffsetFetch answered %s with %d partitions, want NONE with %d", CodeName(code), len(got), len(want))
	}
	for i, po := range got {
		if po.TopicPartition != parts[i] || po.Offset != want[i] {
			return fmt.Errorf("lab: OffsetFetch answered %s=%d, want %s=%d", po.TopicPartition, po.Offset, parts[i], want[i])
		}
	}
	return nil
}

// positionsOf keeps the positions of the partitions in owned.
func positionsOf(positions []PartitionOffset, owned []assignor.TopicPartition) []PartitionOffset {
	var out []PartitionOffset
	for _, po := range positions {
		for _, tp := range owned {
			if po.TopicPartition == tp {
				out = append(out, po)
			}
		}
	}
	return out
}
