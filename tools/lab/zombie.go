package lab

import (
	"context"
	"fmt"
	"io"

	"github.com/minibroker/minibroker/assignor"
)

// Zombie runs the same story twice on one partition, tp, holding ten
// records, and counts the records processed more than once each time: the
// generation fence in numbers.
//
// Member A processes records 0 to 7 (it committed 6 on the way, and holds
// 8 and 9 fetched) and then pauses: it sends nothing, not even heartbeats,
// past its session, and the expiry step removes it. A is not told. Member
// B takes over at the committed offset, processes 6 to 9 and commits 10.
// A wakes and commits 8, the progress it believes it owns.
//
// In the first run the commit carries A's generation and member id, as a
// group member's does, and the fence refuses it: ILLEGAL_GENERATION, the
// committed offset stays 10, and A, told it is no longer the owner, drops
// 8 and 9. In the second run the same commit goes as a direct commit
// (generation -1, no member id), which the chapter stores without any
// check: the committed offset goes back to 8, A carries on with 8 and 9,
// and once B has left, member C starts at 8 and processes them a third
// time.
func Zombie(ctx context.Context, w io.Writer, c clockRun, addr, group string, tp assignor.TopicPartition) error {
	fmt.Fprintf(w, "lab zombie: a paused owner wakes up, in group %s-fenced, then %s-unfenced, topic %s\n", group, group, tp.Topic)
	fmt.Fprintf(w, "A consumer that stops for longer than its session is removed from the group but\n")
	fmt.Fprintf(w, "is not told; when it wakes it still believes it owns its partition. This lab runs\n")
	fmt.Fprintf(w, "that story twice, once with the generation fence on the zombie's commit and once\n")
	fmt.Fprintf(w, "without it, and counts how often each record is processed.\n")
	fmt.Fprintf(w, "Each step lists the requests sent (>) and the broker's answers (<).\n")

	heading(w, fmt.Sprintf("Setup. Ten records go to %s in one batch, with fixed timestamps.", tp))
	producer, err := Dial(ctx, addr, MemberConfig{Group: group, Trace: w})
	if err != nil {
		return err
	}
	err = produceLabRecords(ctx, producer, tp)
	producer.Close()
	if err != nil {
		return err
	}

	fmt.Fprintf(w, "\n== Run 1: the zombie commits as a group member, and the fence stops it.\n")
	fenced, err := zombieRun(ctx, w, c, addr, group+"-fenced", tp, true)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "\n== Run 2: the same story, but the zombie's commit is a direct commit, which nothing fences.\n")
	unfenced, err := zombieRun(ctx, w, c, addr, group+"-unfenced", tp, false)
	if err != nil {
		return err
	}
	if fenced != 2 || unfenced != 6 {
		return fmt.Errorf("lab zombie: %d and %d duplicates, want 2 and 6", fenced, unfenced)
	}

	fmt.Fprintf(w, "\nA zombie is the four states out of step. While A slept, the coordinator's membership\n")
	fmt.Fprintf(w, "and its new generation's assignment gave %s to B; A's memory still said A,\n", tp)
	fmt.Fprintf(w, "at position 10; the committed offset said what the last accepted commit said. The\n")
	fmt.Fprintf(w, "fence checks a commit against the first two, never against what a member remembers.\n")
	fmt.Fprintf(w, "\nKafka refuses both of A's commits while B is a member, each with UNKNOWN_MEMBER_ID:\n")
	fmt.Fprintf(w, "it looks at the member before the generation, and takes a direct commit only into an\n")
	fmt.Fprintf(w, "Empty group, where it stores it backwards or not (docs/behavior-matrix.md, rows\n")
	fmt.Fprintf(w, "zombie-commit and direct-commit-backwards).\n")
	fmt.Fprintf(w, "\nThe fence in numbers: %d duplicates with it, %d without. The %d are records 6 and 7,\n", fenced, unfenced, fenced)
	fmt.Fprintf(w, "processed before the pause and not committed: at-least-once, which no fence prevents.\n")
	fmt.Fprintf(w, "The other %d are records 8 and 9, processed by a member that no longer owned them and\n", unfenced-fenced)
	fmt.Fprintf(w, "once more after its commit set the group back: what the fence stops.\n")
	return nil
}

// zombieRun plays the story once in group and returns the number of
// processings beyond the first. fenced chooses the zombie's commit: a
// group member's (fenced) or a direct one.
func zombieRun(ctx context.Context, w io.Writer, c clockRun, addr, group string, tp assignor.TopicPartition, fenced bool) (int, error) {
	t := newTally()
	a, err := newReader(ctx, addr, "A", MemberConfig{Group: group, SessionTimeout: c.shortSession()}, tp, t, w)
	if err != nil {
		return 0, err
	}
	defer a.Close()
	b, err := newReader(ctx, addr, "B", MemberConfig{Group: group}, tp, t, w)
	if err != nil {
		return 0, err
	}
	defer b.Close()
	cm, err := newReader(ctx, addr, "C", MemberConfig{Group: group}, tp, t, w)
	if err != nil {
		return 0, err
	}
	defer cm.Close()
	defer leaveQuietly(ctx, cm.Member)

	heading(w, fmt.Sprintf("1. Member A joins, is given %s, fetches the ten records and processes 0 to 7,", tp))
	fmt.Fprintf(w, "   committing 6 on the way.\n")
	if err := a.join(ctx); err != nil {
		return 0, err
	}
	if _, err := a.start(ctx); err != nil {
		return 0, err
	}
	if err := a.fetch(ctx); err != nil {
		return 0, err
	}
	if err := a.process(5); err != nil {
		return 0, err
	}
	if err := a.commit(ctx, 6, 0); err != nil {
		return 0, err
	}
	if err := a.process(7); err != nil {
		return 0, err
	}
	printState(w, 6, a, b, cm)

	heading(w, "2. A pauses: no request at all, not even a heartbeat, for longer than its session.")
	if err := c.endSession(ctx, w, b.Member, group, a.ID); err != nil {
		return 0, err
	}
	fmt.Fprintf(w, "  A has not been told. It still believes it owns %s, at generation %d.\n", Partitions(a.Assigned), a.Generation)

	heading(w, fmt.Sprintf("3. Member B joins, is given %s, starts at the committed offset, processes", tp))
	fmt.Fprintf(w, "   6 to 9 and commits 10.\n")
	if err := b.join(ctx); err != nil {
		return 0, err
	}
	if _, err := b.start(ctx); err != nil {
		return 0, err
	}
	if err := b.fetch(ctx); err != nil {
		return 0, err
	}
	if err := b.process(9); err != nil {
		return 0, err
	}
	if err := b.commit(ctx, 10, 0); err != nil {
		return 0, err
	}
	printState(w, 10, a, b, cm)

	committed, err := zombieWakes(ctx, w, a, fenced)
	if err != nil {
		return 0, err
	}

	heading(w, "5. B leaves; it has committed all it processed. Member C joins and starts where the")
	fmt.Fprintf(w, "   group's committed offset says.\n")
	if err := b.leave(ctx); err != nil {
		return 0, err
	}
	if err := cm.join(ctx); err != nil {
		return 0, err
	}
	if _, err := cm.start(ctx); err != nil {
		return 0, err
	}
	if err := cm.fetch(ctx); err != nil {
		return 0, err
	}
	if err := cm.process(9); err != nil {
		return 0, err
	}
	if len(cm.done) > 0 {
		if err := cm.commit(ctx, cm.position, 0); err != nil {
			return 0, err
		}
		committed = cm.position
	} else {
		fmt.Fprintf(w, "  Nothing to process: C is at the end of the partition.\n")
	}
	printState(w, committed, a, b, cm)

	heading(w, "Tally.")
	t.write(w)
	extra, byTimes := t.duplicates()
	fmt.Fprintf(w, "  Processed twice: %s; three times: %s. Duplicates: %d.\n", offsetRanges(byTimes[2]), offsetRanges(byTimes[3]), extra)
	return extra, nil
}

// zombieWakes is step 4: A wakes and commits 8. It returns the committed
// offset after it.
func zombieWakes(ctx context.Context, w io.Writer, a *reader, fenced bool) (int64, error) {
	if fenced {
		heading(w, fmt.Sprintf("4. A wakes and commits 8 as the member it was: its member id, generation %d.", a.Generation))
		if err := a.commit(ctx, 8, codeIllegalGeneration); err != nil {
			return 0, err
		}
		committed, err := a.committed(ctx)
		if err != nil {
			return 0, err
		}
		if committed != 10 {
			return 0, fmt.Errorf("lab zombie: the committed offset is %d after the fenced commit, want 10", committed)
		}
		fmt.Fprintf(w, "  Refused: the group is at a later generation. The committed offset stays 10, B's.\n")
		fmt.Fprintf(w, "  A takes the refusal as news that %s is no longer its own, and drops 8 and 9\n", a.tp)
		fmt.Fprintf(w, "  unprocessed.\n")
		a.drop()
		printState(w, committed, a)
		return committed, nil
	}
	heading(w, "4. A wakes and commits 8, this time as a direct commit: generation -1, no member id.")
	if err := expectCommit(ctx, a.Member, "", -1, 0, PartitionOffset{TopicPartition: a.tp, Offset: 8}); err != nil {
		return 0, err
	}
	committed, err := a.committed(ctx)
	if err != nil {
		return 0, err
	}
	if committed != 8 {
		return 0, fmt.Errorf("lab zombie: the committed offset is %d after the direct commit, want 8", committed)
	}
	fmt.Fprintf(w, "  Stored, with no check at all: the committed offset went back from 10 to 8.\n")
	fmt.Fprintf(w, "  Nothing told A that it lost %s, so it processes the records it holds.\n", a.tp)
	if err := a.process(9); err != nil {
		return 0, err
	}
	fmt.Fprintf(w, "  Only its next heartbeat tells it:\n")
	if err := expectHeartbeat(ctx, a.Member, codeIllegalGeneration); err != nil {
		return 0, err
	}
	fmt.Fprintf(w, "  A gives %s up. It lost the partition rather than handing it over, so it commits\n", a.tp)
	fmt.Fprintf(w, "  nothing more.\n")
	printState(w, committed, a)
	return committed, nil
}
