package compare

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/minibroker/minibroker/tools/lab"
)

// staleGenerationCommit is exercise 2: the first member commits the
// partitions it held before the second joined, under that generation; then,
// refreshed, it commits what it owns now.
func staleGenerationCommit(ctx context.Context, s *Script) (string, error) {
	p, err := s.twoMembers(ctx)
	if err != nil {
		return "", err
	}
	stale := offsetsOf(p.oldAssigned)
	code, err := commitCode(ctx, p.first, p.first.ID, p.oldGeneration, stale...)
	if err != nil {
		return "", err
	}
	stored, err := storedWord(ctx, p.first, stale...)
	if err != nil {
		return "", err
	}
	after, err := commitCode(ctx, p.first, p.first.ID, p.first.Generation, offsetsOf(p.first.Assigned)...)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%s, %s; after refresh %s", code, stored, after), nil
}

// ownershipViolation is exercise 4: a member at the current generation
// commits a partition the other member owns.
func ownershipViolation(ctx context.Context, s *Script) (string, error) {
	p, err := s.twoMembers(ctx)
	if err != nil {
		return "", err
	}
	if len(p.second.Assigned) == 0 {
		return "", errors.New("the second member owns nothing")
	}
	theirs := offsetsOf(p.second.Assigned[:1])
	code, err := commitCode(ctx, p.first, p.first.ID, p.first.Generation, theirs...)
	if err != nil {
		return "", err
	}
	stored, err := storedWord(ctx, p.first, theirs...)
	return code + ", " + stored, err
}

// commitUnknownPartition: the only member commits a partition that does
// not exist, at the current generation.
func commitUnknownPartition(ctx context.Context, s *Script) (string, error) {
	m, err := s.joined(ctx, s.topic("orders"))
	if err != nil {
		return "", err
	}
	return commitCode(ctx, m, m.ID, m.Generation, lab.PartitionOffset{TopicPartition: lab.TP(s.topic("orders"), 9), Offset: 1})
}

// directCommitWithMembers: a commit with generation -1 and no member id,
// as a consumer with a manual assignment sends, into a group with a member.
func directCommitWithMembers(ctx context.Context, s *Script) (string, error) {
	m, err := s.joined(ctx, s.topic("orders"))
	if err != nil {
		return "", err
	}
	return directCommit(ctx, s, m)
}

// directCommitEmptyGroup: the same direct commit into a group whose only
// member has left.
func directCommitEmptyGroup(ctx context.Context, s *Script) (string, error) {
	m, err := s.joinedThenLeft(ctx)
	if err != nil {
		return "", err
	}
	return directCommit(ctx, s, m)
}

func directCommit(ctx context.Context, s *Script, m *lab.Member) (string, error) {
	offs := []lab.PartitionOffset{{TopicPartition: lab.TP(s.topic("orders"), 0), Offset: 7}}
	code, err := commitCode(ctx, m, "", -1, offs...)
	if err != nil {
		return "", err
	}
	stored, err := storedWord(ctx, m, offs...)
	return code + ", " + stored, err
}

// commitEmptyGroup: a member leaves the group, which becomes Empty, then
// commits under its last generation.
func commitEmptyGroup(ctx context.Context, s *Script) (string, error) {
	m, err := s.joinedThenLeft(ctx)
	if err != nil {
		return "", err
	}
	offs := offsetsOf(m.Assigned[:1])
	code, err := commitCode(ctx, m, m.ID, m.Generation, offs...)
	if err != nil {
		return "", err
	}
	stored, err := storedWord(ctx, m, offs...)
	return code + ", " + stored, err
}

// joinedThenLeft returns a member that joined, synced and left: its group
// is Empty. Its ID and Generation stay as they were, for stale requests.
func (s *Script) joinedThenLeft(ctx context.Context) (*lab.Member, error) {
	m, err := s.joined(ctx, s.topic("orders"))
	if err != nil {
		return nil, err
	}
	top, codes, err := m.Leave(ctx)
	if err != nil {
		return nil, err
	}
	if top != 0 || len(codes) != 1 || codes[0] != 0 {
		return nil, fmt.Errorf("LeaveGroup answered %s %v", lab.CodeName(top), codes)
	}
	return m, nil
}

// unknownGroup: a heartbeat, a group commit and an offset fetch for a
// group nobody ever joined.
func unknownGroup(ctx context.Context, s *Script) (string, error) {
	m, err := s.member(ctx, s.topic("orders"))
	if err != nil {
		return "", err
	}
	hb, err := codeName(m.HeartbeatAs(ctx, "compare-ghost", 1))
	if err != nil {
		return "", err
	}
	commit, err := commitCode(ctx, m, "compare-ghost", 1, lab.PartitionOffset{TopicPartition: lab.TP(s.topic("orders"), 0), Offset: 7})
	if err != nil {
		return "", err
	}
	code, got, err := m.Fetch(ctx, lab.TP(s.topic("orders"), 0))
	if err != nil {
		return "", err
	}
	fetch := lab.CodeName(code)
	if code == 0 {
		if len(got) != 1 {
			return "", fmt.Errorf("OffsetFetch answered %d partitions for 1", len(got))
		}
		fetch = strconv.FormatInt(got[0].Offset, 10)
	}
	return fmt.Sprintf("heartbeat %s, commit %s, fetch %s", hb, commit, fetch), nil
}

// commitOnlySession and commitOnlyFor shape the commit-does-not-extend-
// session scenario: a member commits for half as long again as its session,
// and never heartbeats.
const (
	commitOnlySession  = time.Second
	commitOnlyFor      = 1500 * time.Millisecond
	commitOnlyInterval = 50 * time.Millisecond
)

// commitDoesNotExtendSession: a member commits every 50 ms for 1.5 s, with
// a 1 s session and no heartbeat, then the group is described.
func commitDoesNotExtendSession(ctx context.Context, s *Script) (string, error) {
	m, err := s.joinedWith(ctx, lab.MemberConfig{Topics: []string{s.topic("orders")}, SessionTimeout: commitOnlySession})
	if err != nil {
		return "", err
	}
	offs := offsetsOf(m.Assigned[:1])
	for end := time.Now().Add(commitOnlyFor); time.Now().Before(end); {
		if _, err := m.Commit(ctx, m.Generation, offs...); err != nil {
			return "", err
		}
		if err := pauseFor(ctx, commitOnlyInterval); err != nil {
			return "", err
		}
	}
	_, state, _, err := m.Describe(ctx)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%s after %v of commits and no heartbeat", state, commitOnlyFor), nil
}

// commitUnknownMember: a commit under the group's current generation from
// a member id the group does not know.
func commitUnknownMember(ctx context.Context, s *Script) (string, error) {
	m, err := s.joined(ctx, s.topic("orders"))
	if err != nil {
		return "", err
	}
	offs := offsetsOf(m.Assigned[:1])
	code, err := commitCode(ctx, m, "compare-ghost", m.Generation, offs...)
	if err != nil {
		return "", err
	}
	stored, err := storedWord(ctx, m, offs...)
	return code + ", " + stored, err
}
