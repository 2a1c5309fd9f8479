package lab

import (
	"context"
	"fmt"
	"io"
	"slices"

	"github.com/minibroker/minibroker/assignor"
)

// Rebalance848 runs the chapter's rebalance lab over the consumer protocol
// (KIP-848) against the broker at addr, in group: member 1 joins alone,
// member 2 joins, member 1 learns of it at its next heartbeat, member 2
// leaves. Each member speaks only ConsumerGroupHeartbeat; the broker
// assigns with its server assignor (uniform, the chapter's round-robin).
//
// The window the chapter describes is step 2: member 2's join computes the
// whole new target and hands member 2 its share at once, while member 1,
// whom no request has reached, still believes it owns every partition.
// There is no revocation step (docs/design.md section 9).
//
// It writes each step with its requests and answers to w and returns an
// error if the transport fails or the broker answers other than
// minibroker's rules say.
func Rebalance848(ctx context.Context, w io.Writer, addr, group, orders string) error {
	first, second, done, err := startConsumerLab(ctx, w, addr, group, orders, "lab rebalance-848: the rebalance lab")
	if err != nil {
		return err
	}
	defer done()

	heading(w, "1. Member 1 joins the empty group (member epoch 0) and is given every partition.")
	if err := expectConsumerJoin(ctx, first, 1); err != nil {
		return err
	}
	fmt.Fprintf(w, "  member 1: %s\n", consumerView(first))

	heading(w, "2. Member 2 joins. The group epoch moves to 2 and the whole target assignment is\n"+
		"   computed at once: member 2's join answer already carries its share.")
	if err := expectConsumerJoin(ctx, second, 2); err != nil {
		return err
	}
	fmt.Fprintf(w, "  member 2: %s\n", consumerView(second))
	fmt.Fprintf(w, "  member 1 local view before its heartbeat: %s\n", consumerView(first))
	both := sharedParts(first.Assigned, second.Assigned)
	fmt.Fprintf(w, "  partitions both members believe they own: %s\n", Partitions(both))
	fmt.Fprintf(w, "  The coordinator's view:\n")
	view, err := first.Describe(ctx)
	if err != nil {
		return err
	}
	if m1, _ := view.Member(first.ID()); view.Code != 0 || view.State != "Reconciling" || m1.Epoch != 1 || !slices.Equal(m1.Current, m1.Target) {
		return fmt.Errorf("lab rebalance-848: ConsumerGroupDescribe answered %+v, want member 1 Reconciling at epoch 1 with its target as its current assignment", view)
	}
	fmt.Fprintf(w, "  The coordinator already counts %s as member 2's: it took them from member 1\n", Partitions(both))
	fmt.Fprintf(w, "  without asking. No revocation step: member 2 got them before member 1 heard it lost\n")
	fmt.Fprintf(w, "  them, and until member 1's next heartbeat only the commit fence stops it (see lab\n")
	fmt.Fprintf(w, "  fencing-848). Kafka would first revoke them from member 1, and give them to member 2\n")
	fmt.Fprintf(w, "  only once member 1's heartbeat showed it had released them.\n")

	heading(w, "3. Member 1 heartbeats at its epoch 1; the answer hands it its whole new assignment.")
	if err := expectConsumerHeartbeat(ctx, first, 0); err != nil {
		return err
	}
	if first.Epoch != second.Epoch {
		return fmt.Errorf("lab rebalance-848: member 1 moved to epoch %d, member 2 joined at %d", first.Epoch, second.Epoch)
	}
	fmt.Fprintf(w, "  member 1: %s\n", consumerView(first))
	fmt.Fprintf(w, "  member 2: %s\n", consumerView(second))
	fmt.Fprintf(w, "  partitions both members believe they own: %s\n", Partitions(sharedParts(first.Assigned, second.Assigned)))

	heading(w, "4. Member 2 leaves (member epoch -1). Member 1 learns of it at its next heartbeat.")
	if err := expectConsumerLeave(ctx, second); err != nil {
		return err
	}
	if err := expectConsumerHeartbeat(ctx, first, 0); err != nil {
		return err
	}
	fmt.Fprintf(w, "  member 1: %s\n", consumerView(first))

	fmt.Fprintf(w, "\nEvery heartbeat above was answered at once: no member waited for another, and the\n")
	fmt.Fprintf(w, "coordinator's server assignor computed every assignment. A member's epoch moved to\n")
	fmt.Fprintf(w, "the group epoch at its own next heartbeat, as the classic lab's member moved to the\n")
	fmt.Fprintf(w, "new generation at its refresh.\n")
	return nil
}

// dialConsumerPair dials the two members the consumer-protocol labs start
// with, "member-1" and "member-2", configured by cfg; closeBoth closes
// their connections.
// startConsumerLab dials the two members of a consumer-protocol lab in
// group, on topic orders (the chapter's, or a name of the run's) with the
// uniform assignor, and prints the lab's title and legend. done makes both
// leave, quietly, and closes them.
func startConsumerLab(ctx context.Context, w io.Writer, addr, group, orders, title string) (first, second *ConsumerMember, done func(), err error) {
	first, second, closeBoth, err := dialConsumerPair(ctx, addr, ConsumerConfig{Group: group, Topics: []string{orders}, Assignor: "uniform", Trace: w})
	if err != nil {
		return nil, nil, nil, err
	}
	fmt.Fprintf(w, "%s over the consumer protocol (KIP-848),\n", title)
	fmt.Fprintf(w, "group %s, topic %s with 4 partitions\n", group, orders)
	fmt.Fprintf(w, "Each step lists the requests sent (>) and the broker's answers (<).\n")
	return first, second, func() {
		leaveConsumerQuietly(ctx, first)
		leaveConsumerQuietly(ctx, second)
		closeBoth()
	}, nil
}

func dialConsumerPair(ctx context.Context, addr string, cfg ConsumerConfig) (first, second *ConsumerMember, closeBoth func(), err error) {
	cfg.MemberID = "member-1"
	first, err = DialConsumer(ctx, addr, cfg)
	if err != nil {
		return nil, nil, nil, err
	}
	cfg.MemberID = "member-2"
	second, err = DialConsumer(ctx, addr, cfg)
	if err != nil {
		first.Close()
		return nil, nil, nil, err
	}
	return first, second, func() { first.Close(); second.Close() }, nil
}

// consumerView renders a member's local view: "orders-0, orders-2 (epoch 2)".
func consumerView(m *ConsumerMember) string {
	return fmt.Sprintf("%s (epoch %d)", Partitions(m.Assigned), m.Epoch)
}

// sharedParts lists the partitions both a and b hold.
func sharedParts(a, b []assignor.TopicPartition) []assignor.TopicPartition {
	var both []assignor.TopicPartition
	for _, tp := range a {
		if slices.Contains(b, tp) {
			both = append(both, tp)
		}
	}
	return both
}

// expectConsumerJoin joins m and insists that it succeeds at epoch.
func expectConsumerJoin(ctx context.Context, m *ConsumerMember, epoch int32) error {
	code, err := m.Join(ctx)
	if err != nil {
		return err
	}
	if code != 0 || m.Epoch != epoch {
		return fmt.Errorf("lab: the join of %s answered %s at epoch %d, want NONE at %d", m.ID(), CodeName(code), m.Epoch, epoch)
	}
	return nil
}

// expectConsumerHeartbeat sends a heartbeat at m's epoch and insists on
// the answer.
func expectConsumerHeartbeat(ctx context.Context, m *ConsumerMember, want int16) error {
	return expectConsumerHeartbeatAt(ctx, m, m.Epoch, want)
}

// expectConsumerHeartbeatAt sends a heartbeat at epoch and insists on the
// answer.
func expectConsumerHeartbeatAt(ctx context.Context, m *ConsumerMember, epoch int32, want int16) error {
	code, err := m.HeartbeatAt(ctx, epoch)
	if err != nil {
		return err
	}
	if code != want {
		return fmt.Errorf("lab: the heartbeat of %s at epoch %d answered %s, want %s", m.ID(), epoch, CodeName(code), CodeName(want))
	}
	return nil
}

// expectConsumerLeave makes m leave and insists that it succeeds.
func expectConsumerLeave(ctx context.Context, m *ConsumerMember) error {
	code, err := m.Leave(ctx)
	if err != nil {
		return err
	}
	if code != 0 {
		return fmt.Errorf("lab: the leave of %s answered %s, want NONE", m.ID(), CodeName(code))
	}
	return nil
}

// leaveConsumerQuietly makes a member that joined leave without tracing
// it, so that a lab run against a long-lived broker leaves no member
// behind. Errors are ignored: the member may have left already.
func leaveConsumerQuietly(ctx context.Context, m *ConsumerMember) {
	if m.Epoch <= 0 {
		return
	}
	m.cfg.Trace = nil
	m.Leave(ctx)
}
