package lab

import (
	"context"
	"fmt"
	"io"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/minibroker/minibroker/assignor"
)

// IdentityTopic is the identity lab's topic, four partitions, which the
// lab creates when the broker lacks it.
const IdentityTopic = "lab-identity-orders"

// Identity shows the chapter's two questions answered by two checks. A
// static member S (a group instance id, KIP-345) and a dynamic member D
// share IdentityTopic. S's process restarts: the new process joins under
// the same instance id, gets a new member id and S's partitions back at
// the same generation, and D notices nothing. S's previous run is not dead:
// it is a zombie that heartbeats and commits under its old member id at
// the current generation, so the generation cannot stop it, and the
// identity check does (FENCED_INSTANCE_ID). Then D's process restarts: a
// dynamic member leaves and joins as a new member, which costs the group
// two generations, and S, at the old generation, is told so by the
// generation check (ILLEGAL_GENERATION) and re-joins.
//
// It writes each step with its requests and answers to w and checks every
// answer against minibroker's rules.
func Identity(ctx context.Context, w io.Writer, addr, group string) error {
	topic := []string{IdentityTopic}
	static := MemberConfig{Group: group, Topics: topic, InstanceID: group + "-s", Trace: w}
	dynamic := MemberConfig{Group: group, Topics: topic, Trace: w}
	s, err := Dial(ctx, addr, static)
	if err != nil {
		return err
	}
	defer s.Close()
	d, err := Dial(ctx, addr, dynamic)
	if err != nil {
		return err
	}
	defer d.Close()

	fmt.Fprintf(w, "lab identity: who are you? and which assignment version are you acting under?\n")
	fmt.Fprintf(w, "group %s, topic %s with 4 partitions\n", group, IdentityTopic)
	fmt.Fprintf(w, "The chapter asks every member two separate questions. A group instance id (static\n")
	fmt.Fprintf(w, "membership) answers the first across restarts; the generation answers the second.\n")
	fmt.Fprintf(w, "Member S is static (instance %s), member D dynamic.\n", static.InstanceID)
	fmt.Fprintf(w, "Each step lists the requests sent (>) and the broker's answers (<).\n")

	heading(w, "Setup. S joins (a static member joins at once, no MEMBER_ID_REQUIRED), then D.")
	if err := joinAndSync(ctx, s); err != nil {
		return err
	}
	if err := joinAndSync(ctx, d); err != nil {
		return err
	}
	if err := joinAndSync(ctx, s); err != nil { // S learns of D's generation
		return err
	}
	gen, sParts, dParts := s.Generation, slices.Clone(s.Assigned), slices.Clone(d.Assigned)
	fmt.Fprintf(w, "  S: %s (generation %d, member %s)\n", Partitions(sParts), gen, s.ID)
	fmt.Fprintf(w, "  D: %s (generation %d, member %s)\n", Partitions(dParts), d.Generation, d.ID)

	heading(w, "1. S's process restarts: the new process joins with the same instance id and no")
	fmt.Fprintf(w, "   member id. The old process is not dead yet: it still holds its old member id.\n")
	restarted, err := Dial(ctx, addr, static)
	if err != nil {
		return err
	}
	defer restarted.Close()
	defer leaveQuietly(ctx, restarted)
	if err := joinAndSync(ctx, restarted); err != nil {
		return err
	}
	if restarted.Generation != gen || !slices.Equal(restarted.Assigned, sParts) || restarted.ID == s.ID {
		return fmt.Errorf("lab identity: the restart is member %s with %s at generation %d, want a new id with %s at %d",
			restarted.ID, Partitions(restarted.Assigned), restarted.Generation, Partitions(sParts), gen)
	}
	if err := expectHeartbeat(ctx, d, 0); err != nil {
		return err
	}
	fmt.Fprintf(w, "  S (new run): %s (generation %d, member %s): the same partitions, no rebalance.\n",
		Partitions(restarted.Assigned), restarted.Generation, restarted.ID)
	fmt.Fprintf(w, "  D heartbeats at generation %d: NONE. Nothing moved.\n", gen)

	heading(w, "2. The zombie (S's previous run) heartbeats and commits under its old member id,")
	fmt.Fprintf(w, "   naming its instance id, at generation %d: the current one.\n", gen)
	if err := expectHeartbeat(ctx, s, kerr.FencedInstanceID.Code); err != nil {
		return err
	}
	owned := []PartitionOffset{{TopicPartition: sParts[0], Offset: 5}}
	if err := expectCommit(ctx, s, s.ID, gen, kerr.FencedInstanceID.Code, owned...); err != nil {
		return err
	}
	if err := expectFetch(ctx, s, []assignor.TopicPartition{sParts[0]}, -1); err != nil {
		return err
	}
	fmt.Fprintf(w, "  result: FENCED_INSTANCE_ID; nothing was stored. Its generation was the current one,\n")
	fmt.Fprintf(w, "  so the generation check would have let it through: the identity check, asked first,\n")
	fmt.Fprintf(w, "  stopped it. Instance %s is member %s now.\n", static.InstanceID, restarted.ID)
	fmt.Fprintf(w, "  The new run commits the same partition:\n")
	if err := expectCommit(ctx, restarted, restarted.ID, gen, 0, owned...); err != nil {
		return err
	}
	fmt.Fprintf(w, "  result: NONE.\n")

	heading(w, "3. D's process restarts: a dynamic member has no identity to come back under. It")
	fmt.Fprintf(w, "   leaves as it closes, and the new process joins as a new member.\n")
	if code, _, err := d.Leave(ctx); err != nil || code != 0 {
		return fmt.Errorf("lab identity: LeaveGroup of %s answered %s (%v), want NONE", d.ID, CodeName(code), err)
	}
	d2, err := Dial(ctx, addr, dynamic)
	if err != nil {
		return err
	}
	defer d2.Close()
	defer leaveQuietly(ctx, d2)
	if err := joinAndSync(ctx, d2); err != nil {
		return err
	}
	fmt.Fprintf(w, "  D (new run): %s (generation %d, member %s): two generations for one restart.\n",
		Partitions(d2.Assigned), d2.Generation, d2.ID)
	if d2.Generation != gen+2 {
		return fmt.Errorf("lab identity: D's restart took the group to generation %d, want %d", d2.Generation, gen+2)
	}
	fmt.Fprintf(w, "  S (new run) still acts under generation %d and heartbeats:\n", restarted.Generation)
	if err := expectHeartbeat(ctx, restarted, kerr.IllegalGeneration.Code); err != nil {
		return err
	}
	fmt.Fprintf(w, "  Its identity is fine; its assignment version is not: ILLEGAL_GENERATION. It re-joins.\n")
	if err := joinAndSync(ctx, restarted); err != nil {
		return err
	}
	fmt.Fprintf(w, "  S (new run): %s (generation %d)\n", Partitions(restarted.Assigned), restarted.Generation)
	if !slices.Equal(restarted.Assigned, sParts) || !slices.Equal(d2.Assigned, dParts) {
		return fmt.Errorf("lab identity: after D's restart S holds %s and D %s, want %s and %s",
			Partitions(restarted.Assigned), Partitions(d2.Assigned), Partitions(sParts), Partitions(dParts))
	}

	fmt.Fprintf(w, "\nTwo questions, two checks:\n")
	fmt.Fprintf(w, "  who are you?                 the identity check: the zombie of S's previous run, at the\n")
	fmt.Fprintf(w, "                               current generation %d, got FENCED_INSTANCE_ID.\n", gen)
	fmt.Fprintf(w, "  which assignment version?    the generation check: S's new run, at generation %d after\n", gen)
	fmt.Fprintf(w, "                               D's restart moved the group to %d, got ILLEGAL_GENERATION.\n", gen+2)
	fmt.Fprintf(w, "S's restart kept generation %d and every partition where it was; D's cost two\n", gen)
	fmt.Fprintf(w, "generations, and the static member sorts first (by instance id), so the assignment\n")
	fmt.Fprintf(w, "came back the same. A stable identity spares a group needless movement; it never\n")
	fmt.Fprintf(w, "replaces the generation check. Kafka answers the same codes (docs/behavior-matrix.md,\n")
	fmt.Fprintf(w, "rows static-membership and static-fencing-order).\n")
	return nil
}
