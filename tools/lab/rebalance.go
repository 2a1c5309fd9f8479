package lab

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Rebalance runs the chapter's rebalance lab against the broker at addr,
// in group: member 1 joins alone, member 2 joins while member 1 keeps its
// stale local view, member 1 refreshes, member 2 leaves. Over the wire a
// refresh is an unchanged re-join (which returns the current generation)
// followed by a SyncGroup, and a member learns that its generation is old
// from its heartbeat (docs/design.md section 4).
//
// It writes the four steps to w, each with its requests and answers, and
// returns an error if the transport fails or the broker answers other
// than minibroker's rules say.
func Rebalance(ctx context.Context, w io.Writer, addr, group, orders string) error {
	cfg := MemberConfig{Group: group, Topics: []string{orders}, Trace: w}
	first, second, closeBoth, err := dialPair(ctx, addr, cfg)
	if err != nil {
		return err
	}
	defer closeBoth()
	defer leaveQuietly(ctx, first)

	fmt.Fprintf(w, "lab rebalance: group %s, topic %s with 4 partitions\n", group, orders)
	fmt.Fprintf(w, "Each step lists the requests sent (>) and the broker's answers (<).\n")

	heading(w, "1. Member 1 joins the empty group and is given every partition.")
	if err := joinAndSync(ctx, first); err != nil {
		return err
	}
	fmt.Fprintf(w, "  member 1: %s\n", Partitions(first.Assigned))

	heading(w, "2. Member 2 joins. The coordinator rebalances at once, to a new generation.")
	if err := joinAndSync(ctx, second); err != nil {
		return err
	}
	fmt.Fprintf(w, "  member 2: %s\n", Partitions(second.Assigned))
	fmt.Fprintf(w, "  member 1 local view before refresh: %s\n", Partitions(first.Assigned))
	fmt.Fprintf(w, "  No request reached member 1: it still believes generation %d and all four partitions.\n", first.Generation)

	heading(w, "3. Member 1's heartbeat is fenced; it refreshes (an unchanged re-join, then SyncGroup).")
	if err := expectHeartbeat(ctx, first, kerr.IllegalGeneration.Code); err != nil {
		return err
	}
	if err := joinAndSync(ctx, first); err != nil {
		return err
	}
	if first.Generation != second.Generation {
		return fmt.Errorf("lab rebalance: the refresh returned generation %d, member 2 joined generation %d", first.Generation, second.Generation)
	}
	fmt.Fprintf(w, "  member 1: %s\n", Partitions(first.Assigned))
	fmt.Fprintf(w, "  member 2: %s\n", Partitions(second.Assigned))
	fmt.Fprintf(w, "  partitions both members believe they own after the refresh: %s\n", shared(first, second))

	heading(w, "4. Member 2 leaves. Member 1 is fenced again, re-joins and owns every partition.")
	if err := expectLeave(ctx, second); err != nil {
		return err
	}
	if err := expectHeartbeat(ctx, first, kerr.IllegalGeneration.Code); err != nil {
		return err
	}
	if err := joinAndSync(ctx, first); err != nil {
		return err
	}
	fmt.Fprintf(w, "  member 1: %s\n", Partitions(first.Assigned))

	fmt.Fprintf(w, "\nEvery JoinGroup above completed on its own: there is no join barrier, and the\n")
	fmt.Fprintf(w, "coordinator, not the group leader, computed each assignment. Kafka would have\n")
	fmt.Fprintf(w, "held member 2's join until member 1 re-joined, and taken the plan from the leader.\n")
	return nil
}

// heading starts a step.
func heading(w io.Writer, text string) {
	fmt.Fprintf(w, "\n%s\n", text)
}

// joinAndSync joins (with the MEMBER_ID_REQUIRED round trip for a new
// member) and syncs, and insists that both succeed.
func joinAndSync(ctx context.Context, m *Member) error {
	code, err := m.Join(ctx)
	if err != nil {
		return err
	}
	if code != 0 {
		return fmt.Errorf("lab: JoinGroup of %s answered %s, want NONE", quoteID(m.ID), CodeName(code))
	}
	if code, err = m.Sync(ctx); err != nil {
		return err
	}
	if code != 0 {
		return fmt.Errorf("lab: SyncGroup of %s answered %s, want NONE", m.ID, CodeName(code))
	}
	return nil
}

// expectHeartbeat sends a heartbeat under the member's generation and
// insists on the answer.
func expectHeartbeat(ctx context.Context, m *Member, want int16) error {
	code, err := m.Heartbeat(ctx, m.Generation)
	if err != nil {
		return err
	}
	if code != want {
		return fmt.Errorf("lab: Heartbeat of %s at generation %d answered %s, want %s", m.ID, m.Generation, CodeName(code), CodeName(want))
	}
	return nil
}

// expectLeave makes the member leave and insists that it succeeds.
func expectLeave(ctx context.Context, m *Member) error {
	top, codes, err := m.Leave(ctx)
	if err != nil {
		return err
	}
	if top != 0 || len(codes) != 1 || codes[0] != 0 {
		return fmt.Errorf("lab: LeaveGroup of %s answered %s %v, want NONE", m.ID, CodeName(top), codes)
	}
	return nil
}

// leaveQuietly makes a member leave without tracing it, so that a lab run
// against a long-lived broker leaves no member behind. Errors are ignored:
// the member may have left or expired already.
func leaveQuietly(ctx context.Context, m *Member) {
	if m.ID == "" {
		return
	}
	m.cfg.Trace = nil
	m.Leave(ctx)
}

// shared lists the partitions both members' local views hold, "none"
// when they share nothing.
func shared(a, b *Member) string {
	var both []string
	for _, tp := range a.Assigned {
		if slices.Contains(b.Assigned, tp) {
			both = append(both, tp.String())
		}
	}
	if len(both) == 0 {
		return "none"
	}
	return strings.Join(both, ", ")
}
