package compare

// Scenarios of the consumer protocol (KIP-848): members that speak only
// ConsumerGroupHeartbeat, through lab.ConsumerMember. kfake implements
// Kafka's incremental reconciliation: a partition moves to its new owner
// only after the old owner's heartbeat shows it released it
// (CurrentAssignmentBuilder). minibroker hands every member its whole new
// assignment at its next heartbeat (docs/design.md section 9). Both
// answer at once: nothing here waits on a barrier.

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/minibroker/minibroker/assignor"
	"github.com/minibroker/minibroker/tools/lab"
)

// consumer dials a consumer-protocol member of the script's group with
// the given id, server assignor ("" for the broker's default) and
// subscription.
func (s *Script) consumer(ctx context.Context, id, serverAssignor string, topics ...string) (*lab.ConsumerMember, error) {
	m, err := lab.DialConsumer(ctx, s.addr, lab.ConsumerConfig{
		Group: s.group, MemberID: id, ClientID: "compare", Topics: topics, Assignor: serverAssignor,
	})
	if err != nil {
		return nil, err
	}
	s.consumers = append(s.consumers, m)
	return m, nil
}

// joinedConsumer dials a consumer-protocol member and insists that its
// join succeeds.
func (s *Script) joinedConsumer(ctx context.Context, id, serverAssignor string, topics ...string) (*lab.ConsumerMember, error) {
	m, err := s.consumer(ctx, id, serverAssignor, topics...)
	if err != nil {
		return nil, err
	}
	if err := want(m.Join(ctx))("join of "+id, 0); err != nil {
		return nil, err
	}
	return m, nil
}

// beat sends a heartbeat at the member's epoch and insists on NONE.
func beat(ctx context.Context, m *lab.ConsumerMember) error {
	return want(m.Heartbeat(ctx))("heartbeat of "+m.ID(), 0)
}

// parts renders partitions for an answer: "orders-0,orders-2", "(none)".
func parts(ps []assignor.TopicPartition) string {
	if len(ps) == 0 {
		return "(none)"
	}
	names := make([]string, len(ps))
	for i, tp := range ps {
		names[i] = tp.String()
	}
	return strings.Join(names, ",")
}

// both lists the partitions a and b both hold.
func both(a, b []assignor.TopicPartition) []assignor.TopicPartition {
	var out []assignor.TopicPartition
	for _, tp := range a {
		if slices.Contains(b, tp) {
			out = append(out, tp)
		}
	}
	return out
}

// twoOwners is the window the chapter's model opens and Kafka's closes.
// member-1 joins alone (range, so both sides split orders the same way);
// member-2 joins; member-1, which has heard nothing, commits a partition
// the new target gives member-2; then member-1 heartbeats twice, reporting
// what it owns each time (first all four, then what the answer left it),
// and member-2 heartbeats after each. minibroker hands member-2 its share
// at its join, so both members believe they own it until member-1's
// heartbeat, and only the ownership check refuses member-1's commit.
// kfake revokes first: member-2 gets nothing at its join nor after
// member-1's first heartbeat (which only revokes), and gets its share once
// member-1's second heartbeat shows it released it; member-1's commit in
// the window is stored, since member-1 still owns the partition.
func twoOwners(ctx context.Context, s *Script) (string, error) {
	old, err := s.joinedConsumer(ctx, "member-1", "range", s.topic("orders"))
	if err != nil {
		return "", err
	}
	joiner, err := s.joinedConsumer(ctx, "member-2", "range", s.topic("orders"))
	if err != nil {
		return "", err
	}
	atJoin, window := joiner.Assigned, both(old.Assigned, joiner.Assigned)
	view, err := old.Describe(ctx)
	if err != nil {
		return "", err
	}
	target, ok := view.Member(joiner.ID())
	moved := both(old.Assigned, target.Target)
	if view.Code != 0 || !ok || len(moved) == 0 {
		return "", fmt.Errorf("ConsumerGroupDescribe answered %+v: no partition moves to member-2", view)
	}
	offs := offsetsOf(moved[:1])
	code, err := commitConsumer(ctx, old, old.Epoch, offs...)
	if err != nil {
		return "", err
	}
	stored, err := storedWord(ctx, old, offs...)
	if err != nil {
		return "", err
	}
	if err := beat(ctx, old); err != nil {
		return "", err
	}
	first := fmt.Sprintf("epoch %d %s", old.Epoch, parts(old.Assigned))
	if err := beat(ctx, joiner); err != nil {
		return "", err
	}
	between := joiner.Assigned
	if err := beat(ctx, old); err != nil {
		return "", err
	}
	if err := beat(ctx, joiner); err != nil {
		return "", err
	}
	return fmt.Sprintf("joiner gets %s at its join; both own %s; old owner's commit of %s %s, %s; its heartbeat: %s; joiner then %s; after the old owner's next heartbeat (epoch %d) %s",
		parts(atJoin), parts(window), moved[0], code, stored, first, parts(between), old.Epoch, parts(joiner.Assigned)), nil
}

// commitConsumer commits offs as m at epoch and returns the one code every
// partition carries.
func commitConsumer(ctx context.Context, m *lab.ConsumerMember, epoch int32, offs ...lab.PartitionOffset) (string, error) {
	codes, err := m.Commit(ctx, epoch, offs...)
	if err != nil {
		return "", err
	}
	code, ok := lab.OneCode(codes)
	if !ok || len(codes) != len(offs) {
		return "", fmt.Errorf("OffsetCommit answered %v for %d partitions: not one code for all", codes, len(offs))
	}
	return lab.CodeName(code), nil
}

// movedOnByAnother is the setup of the previous-epoch scenarios: member-1
// joins on orders (epoch 1, all of orders), member-2 joins on payments
// (group epoch 2; member-1 keeps everything), and member-1's heartbeat
// moves it to epoch 2 with the same partitions: its previous epoch is 1.
func (s *Script) movedOnByAnother(ctx context.Context) (*lab.ConsumerMember, error) {
	m, err := s.joinedConsumer(ctx, "member-1", "range", s.topic("orders"))
	if err != nil {
		return nil, err
	}
	if _, err := s.joinedConsumer(ctx, "member-2", "range", s.topic("payments")); err != nil {
		return nil, err
	}
	if err := beat(ctx, m); err != nil {
		return nil, err
	}
	if m.Epoch != 2 || len(m.Assigned) != 4 {
		return nil, fmt.Errorf("member-1 is at epoch %d with %s, want epoch 2 with all of orders", m.Epoch, parts(m.Assigned))
	}
	return m, nil
}

// previousEpochHeartbeat: a heartbeat at the member's previous epoch that
// reports a subset of its assignment (what a client whose last answer was
// lost sends), then one at an epoch ahead of it. Kafka, and kfake, accept
// the first; minibroker fences any epoch but the current one.
func previousEpochHeartbeat(ctx context.Context, s *Script) (string, error) {
	m, err := s.movedOnByAnother(ctx)
	if err != nil {
		return "", err
	}
	prev, err := codeName(m.HeartbeatAt(ctx, 1))
	if err != nil {
		return "", err
	}
	if prev == "NONE" {
		prev += fmt.Sprintf(" at epoch %d", m.Epoch)
	}
	ahead, err := codeName(m.HeartbeatAt(ctx, 3))
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("previous epoch %s; epoch ahead %s", prev, ahead), nil
}

// previousEpochCommit: a commit at the member's previous epoch of a
// partition it has held since then, and one at an epoch ahead of it.
// minibroker requires the member's current epoch, as Kafka up to 4.2;
// kfake follows Kafka 4.3 (KIP-1251) and stores the first.
func previousEpochCommit(ctx context.Context, s *Script) (string, error) {
	m, err := s.movedOnByAnother(ctx)
	if err != nil {
		return "", err
	}
	offs := offsetsOf(m.Assigned[:1])
	prev, err := commitConsumer(ctx, m, 1, offs...)
	if err != nil {
		return "", err
	}
	stored, err := storedWord(ctx, m, offs...)
	if err != nil {
		return "", err
	}
	ahead, err := commitConsumer(ctx, m, 3, offs...)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("previous epoch %s, %s; epoch ahead %s", prev, stored, ahead), nil
}
