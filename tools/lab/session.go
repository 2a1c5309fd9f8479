package lab

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/minibroker/minibroker/broker"
	"github.com/minibroker/minibroker/coordinator"
)

// Sessions of the record labs' members. In process the manual clock
// stands still, so a session is as long as the lab says; the chapter's
// 30 s stands for any. Against a broker in another process the clock is
// real, and a member whose session must end waits it out, so that member
// joins with a short one.
const (
	recordLabSession       = 30 * time.Second
	recordLabRemoteSession = 2 * time.Second
	// remoteExpiryGrace is how long after a session's end the lab waits
	// for a broker in another process to run its expiry step.
	remoteExpiryGrace = 10 * time.Second
	// remoteExpiryPoll is how often it asks meanwhile.
	remoteExpiryPoll = 50 * time.Millisecond
)

// clockRun is where a record lab runs: the in-process broker b, whose
// manual clock the lab moves, or (b nil) a broker in another process on
// its real clock.
type clockRun struct {
	b     *broker.Broker
	start time.Time // b's clock when the lab began
}

// newClockRun notes b's clock (if any) as the lab's start.
func newClockRun(b *broker.Broker) clockRun {
	if b == nil {
		return clockRun{}
	}
	return clockRun{b: b, start: b.Now()}
}

// shortSession is the session of a member whose session the lab ends.
func (c clockRun) shortSession() time.Duration {
	if c.b == nil {
		return recordLabRemoteSession
	}
	return recordLabSession
}

// millis renders b's clock as the milliseconds since the lab began.
func (c clockRun) millis(t time.Time) int64 { return t.Sub(c.start).Milliseconds() }

// endSession ends memberID's session where the broker ends every session:
// in its expiry step. In process, the lab moves the manual clock 1 ms past
// the member's deadline and runs the step, as exercise 3 does, and insists
// that it removes exactly that member. Against a broker in another
// process, the step runs on the broker's real clock, so the lab waits
// until it has removed the member, asking with DescribeGroups (not traced)
// as watcher.
func (c clockRun) endSession(ctx context.Context, w io.Writer, watcher *Member, group, memberID string) error {
	if c.b == nil {
		return awaitExpiry(ctx, w, watcher, memberID)
	}
	view, _ := c.b.Coordinator().Describe(group)
	i := slices.IndexFunc(view.Members, func(mv coordinator.MemberView) bool { return mv.MemberID == memberID })
	if i < 0 {
		return fmt.Errorf("lab: %s is not a member of %s", memberID, group)
	}
	deadline := view.Members[i].Deadline
	if _, err := c.b.Advance(deadline.Add(time.Millisecond).Sub(c.b.Now())); err != nil {
		return err
	}
	var removed []string
	for _, e := range c.b.Expire() {
		removed = append(removed, e.MemberID)
	}
	fmt.Fprintf(w, "  clock: %d ms, 1 ms past %s's session deadline; expiry step (in process): removed %s\n",
		c.millis(c.b.Now()), memberID, strings.Join(removed, ", "))
	if !slices.Equal(removed, []string{memberID}) {
		return fmt.Errorf("lab: the expiry step removed %v, want %s alone", removed, memberID)
	}
	return nil
}

// awaitExpiry waits until memberID is no longer a member of watcher's
// group.
func awaitExpiry(ctx context.Context, w io.Writer, watcher *Member, memberID string) error {
	fmt.Fprintf(w, "  The broker runs in another process, on its real clock: the lab waits for its expiry step.\n")
	run := ctx
	ctx, cancel := context.WithTimeout(ctx, recordLabRemoteSession+remoteExpiryGrace)
	defer cancel()
	trace := watcher.cfg.Trace
	watcher.cfg.Trace = nil
	defer func() { watcher.cfg.Trace = trace }()
	tick := time.NewTicker(remoteExpiryPoll)
	defer tick.Stop()
	for {
		code, _, members, err := watcher.Describe(ctx)
		if err == nil && code == 0 && !slices.Contains(members, memberID) {
			fmt.Fprintf(w, "  expiry step (the broker's own): removed %s\n", memberID)
			return nil
		}
		select {
		case <-ctx.Done():
			if err := run.Err(); err != nil {
				return err // the run ended (interrupted): no claim about the broker
			}
			return fmt.Errorf("lab: the broker did not expire %s within %v of its session's end; if it runs on a manual clock (--clock manual), its expiry step runs only when asked (POST /v1/expire): run the lab without --broker", memberID, remoteExpiryGrace)
		case <-tick.C:
		}
	}
}
