package lab

import (
	"context"
	"fmt"
	"io"

	"github.com/minibroker/minibroker/assignor"
)

// labValues are the records every record lab produces: ten payments.
func labValues() []string {
	values := make([]string, 10)
	for i := range values {
		values[i] = fmt.Sprintf("payment-%d", i)
	}
	return values
}

// produceLabRecords puts labValues into tp, one batch, through m's
// connection, and insists that they land at offsets 0-9: the labs need a
// partition of their own.
func produceLabRecords(ctx context.Context, m *Member, tp assignor.TopicPartition) error {
	code, base, err := m.Produce(ctx, tp, labValues()...)
	if err != nil {
		return err
	}
	if code != 0 || base != 0 {
		return fmt.Errorf("lab: Produce to %s answered %s at base offset %d, want NONE at 0 (the lab needs an empty partition)", tp, CodeName(code), base)
	}
	return nil
}

// Replay runs the chapter's exercise 1 over the wire, on one partition,
// tp: member A fetches records 0 to 9 (its position becomes 10), processes
// 0 to 5 and commits 6, processes 6 to 9, and crashes before it commits
// again; its session ends in the expiry step; member B starts at the
// committed offset and processes 6 to 9 a second time, the same bytes.
//
// A crashes rather than leaves because that is the case the exercise is
// about: a leave is sent by a consumer that is shutting down, which
// commits what it processed first (kgo does it in OnPartitionsRevoked), so
// nothing would replay. A crash sends nothing; the broker learns of it
// only when the session runs out, and by then A's position is gone.
func Replay(ctx context.Context, w io.Writer, c clockRun, addr, group string, tp assignor.TopicPartition) error {
	t := newTally()
	cfg := MemberConfig{Group: group, SessionTimeout: c.shortSession()}
	a, err := newReader(ctx, addr, "A", cfg, tp, t, w)
	if err != nil {
		return err
	}
	defer a.Close()
	b, err := newReader(ctx, addr, "B", MemberConfig{Group: group}, tp, t, w)
	if err != nil {
		return err
	}
	defer b.Close()
	defer leaveQuietly(ctx, b.Member)

	fmt.Fprintf(w, "lab replay: exercise 1, group %s, topic %s with 1 partition\n", group, tp.Topic)
	fmt.Fprintf(w, "A consumer's position (the next offset it will fetch) lives in its memory; the\n")
	fmt.Fprintf(w, "group's committed offset lives in the broker. This lab crashes a consumer between\n")
	fmt.Fprintf(w, "the two and shows where its successor starts.\n")
	fmt.Fprintf(w, "Each step lists the requests sent (>) and the broker's answers (<); a state line\n")
	fmt.Fprintf(w, "shows each member's memory beside the committed offset.\n")

	heading(w, fmt.Sprintf("Setup. Ten records go to %s in one batch, with fixed timestamps.", tp))
	if err := produceLabRecords(ctx, a.Member, tp); err != nil {
		return err
	}

	heading(w, fmt.Sprintf("1. Member A joins and is given %s. It asks where to start.", tp))
	if err := a.join(ctx); err != nil {
		return err
	}
	committed, err := a.start(ctx)
	if err != nil {
		return err
	}
	printState(w, committed, a, b)

	heading(w, "2. A fetches. Its position moves past everything it fetched, processed or not.")
	if err := a.fetch(ctx); err != nil {
		return err
	}
	printState(w, committed, a, b)

	heading(w, "3. A processes records 0 to 5 and commits 6, the next offset to process.")
	if err := a.process(5); err != nil {
		return err
	}
	if err := a.commit(ctx, 6, 0); err != nil {
		return err
	}
	committed = 6
	printState(w, committed, a, b)

	heading(w, "4. A processes records 6 to 9. Before its next commit, its process is killed.")
	if err := a.process(9); err != nil {
		return err
	}
	printState(w, committed, a, b)
	if a.position != 10 || committed != 6 {
		return fmt.Errorf("lab replay: A's position is %d and the committed offset %d, want exercise 1's 10 and 6", a.position, committed)
	}
	a.crash()
	fmt.Fprintf(w, "  The crash sends nothing: no commit, no LeaveGroup. Position 10 was only in A's memory.\n")
	fmt.Fprintf(w, "  (A leave would not show the point: a consumer that shuts down cleanly commits what it\n")
	fmt.Fprintf(w, "  processed before it leaves, and nothing would replay.)\n")
	printState(w, committed, a, b)

	heading(w, "5. A's session runs out. Only the expiry step ends a session.")
	if err := c.endSession(ctx, w, b.Member, group, a.ID); err != nil {
		return err
	}

	heading(w, fmt.Sprintf("6. Member B joins, is given %s, and asks where to start.", tp))
	if err := b.join(ctx); err != nil {
		return err
	}
	if committed, err = b.start(ctx); err != nil {
		return err
	}
	if committed != 6 {
		return fmt.Errorf("lab replay: B found committed offset %d, want 6", committed)
	}
	printState(w, committed, a, b)

	heading(w, "7. B fetches from 6 and processes what it gets, then commits.")
	if err := b.fetch(ctx); err != nil {
		return err
	}
	if err := b.process(9); err != nil {
		return err
	}
	if err := b.commit(ctx, b.position, 0); err != nil {
		return err
	}
	if committed, err = b.committed(ctx); err != nil {
		return err
	}
	printState(w, committed, a, b)

	heading(w, "Tally.")
	t.write(w)
	extra, byTimes := t.duplicates()
	if extra != 4 || len(byTimes) != 1 || offsetRanges(byTimes[2]) != "6-9" {
		return fmt.Errorf("lab replay: %d duplicates %v, want records 6-9 twice", extra, byTimes)
	}
	fmt.Fprintf(w, "  Records 6-9 were processed twice: %d duplicates, the second time the same bytes.\n", extra)
	fmt.Fprintf(w, "\nOf the four states, A's membership ended in the expiry step, and its assignment with\n")
	fmt.Fprintf(w, "the generation that followed; A's position died with its process, for it lived only\n")
	fmt.Fprintf(w, "in A's memory; the committed offset, which the broker keeps, outlived both, and is\n")
	fmt.Fprintf(w, "where B began.\n")
	fmt.Fprintf(w, "\nAt least once: whatever A processed after its last commit, its successor processes again.\n")
	return nil
}
