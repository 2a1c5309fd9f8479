package lab

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/minibroker/minibroker/broker"
)

// ErrNeedsInProcess is returned for the expiry lab against a broker that
// is not in this process: it moves the broker's manual clock and runs the
// coordinator's expiry step, which the Kafka protocol cannot do.
var ErrNeedsInProcess = errors.New("needs the in-process broker: it moves the broker's manual clock and runs the expiry step from inside the process, which the Kafka protocol cannot do")

// expirySession is exercise 3's session timeout.
const expirySession = 100 * time.Millisecond

// Expiry runs the chapter's exercise 3 against b, which must run on a
// manual clock: two members join at the clock's current reading with a
// 100 ms session timeout; the expiry step at exactly 100 ms removes nobody,
// and at 101 ms removes both and leaves the group Empty. Members join and
// the group is observed over the wire; the clock and the expiry step are
// driven in process, as the chapter's exercise drives its ManualClock.
func Expiry(ctx context.Context, w io.Writer, b *broker.Broker, group string) error {
	if b == nil {
		return ErrNeedsInProcess
	}
	start := b.Now()
	if _, err := b.Advance(0); err != nil {
		return fmt.Errorf("lab expiry: %w", err)
	}
	cfg := MemberConfig{Group: group, Topics: []string{"orders"}, SessionTimeout: expirySession, Trace: w}
	first, second, closeBoth, err := dialPair(ctx, b.Addr(), cfg)
	if err != nil {
		return err
	}
	defer closeBoth()

	fmt.Fprintf(w, "lab expiry: exercise 3, group %s, topic orders with 4 partitions\n", group)
	fmt.Fprintf(w, "The broker runs on a manual clock that starts at 0 ms and moves only when the lab\n")
	fmt.Fprintf(w, "advances it; the expiry step runs only when the lab calls it.\n")
	fmt.Fprintf(w, "Each step lists the requests sent (>) and the broker's answers (<).\n")

	heading(w, fmt.Sprintf("Setup. At 0 ms two members join, each with a %v session timeout.", expirySession))
	if err := joinAndSync(ctx, first); err != nil {
		return err
	}
	if err := joinAndSync(ctx, second); err != nil {
		return err
	}
	view, _ := b.Coordinator().Describe(group)
	for _, mv := range view.Members {
		fmt.Fprintf(w, "  session deadline of %s: %d ms\n", mv.MemberID, mv.Deadline.Sub(start).Milliseconds())
	}

	heading(w, "1. Advance the clock to 100 ms, exactly the deadline, and run the expiry step.")
	if err := expireAt(w, b, start, 100*time.Millisecond, nil); err != nil {
		return err
	}
	if err := expectDescribe(ctx, first, "Stable", first.ID, second.ID); err != nil {
		return err
	}
	fmt.Fprintf(w, "  Nobody expired: a member expires only once the clock is past its deadline.\n")

	heading(w, "2. Advance the clock to 101 ms and run the expiry step again.")
	if err := expireAt(w, b, start, 101*time.Millisecond, []string{first.ID, second.ID}); err != nil {
		return err
	}
	if err := expectDescribe(ctx, first, "Empty"); err != nil {
		return err
	}
	fmt.Fprintf(w, "  Both members expired in one step, and one rebalance left the group Empty.\n")
	fmt.Fprintf(w, "  Member 2 only finds out at its next heartbeat:\n")
	if err := expectHeartbeat(ctx, second, kerr.IllegalGeneration.Code); err != nil {
		return err
	}
	fmt.Fprintf(w, "  The group moved to a new generation when it emptied, and the generation is\n")
	fmt.Fprintf(w, "  checked before membership (the chapter's order; Kafka answers UNKNOWN_MEMBER_ID).\n")
	return nil
}

// expireAt moves b's clock to at (measured from start), runs the expiry
// step and insists that it removes exactly want, in order.
func expireAt(w io.Writer, b *broker.Broker, start time.Time, at time.Duration, want []string) error {
	if _, err := b.Advance(start.Add(at).Sub(b.Now())); err != nil {
		return err
	}
	var got []string
	for _, e := range b.Expire() {
		got = append(got, e.MemberID)
	}
	removed := "(none)"
	if len(got) > 0 {
		removed = strings.Join(got, ", ")
	}
	fmt.Fprintf(w, "  clock: %d ms; expiry step (in process): removed %s\n", b.Now().Sub(start).Milliseconds(), removed)
	if !slices.Equal(got, want) {
		return fmt.Errorf("lab expiry: at %v the expiry step removed %v, want %v", at, got, want)
	}
	return nil
}

// expectDescribe describes the member's group and insists on its state and
// members.
func expectDescribe(ctx context.Context, m *Member, state string, members ...string) error {
	code, gotState, got, err := m.Describe(ctx)
	if err != nil {
		return err
	}
	if code != 0 || gotState != state || !slices.Equal(got, members) {
		return fmt.Errorf("lab: DescribeGroups answered %s %s %v, want NONE %s %v", CodeName(code), gotState, got, state, members)
	}
	return nil
}
