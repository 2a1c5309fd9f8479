package compare

// Scenarios with records: a partition of the scenario's own (a topic named
// like its group, one partition, created by Prepare) holding ten
// records, produced in one batch as lab.Produce makes it, and read back
// with Fetch. They set the chapter's four states side by side on both
// brokers: where a member starts (the committed offset), what it gets
// there (the same bytes), and which commits a broker lets move the
// committed offset.

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/minibroker/minibroker/assignor"
	"github.com/minibroker/minibroker/records"
	"github.com/minibroker/minibroker/tools/lab"
	"github.com/minibroker/minibroker/wireclient"
)

// recordSession is the session of a member a record scenario lets expire:
// short, so that the scenario ends soon after it, as sessionExpiryTimeout.
const recordSession = sessionExpiryTimeout

// recordValues are the ten records of every record scenario.
func recordValues() []string {
	values := make([]string, 10)
	for i := range values {
		values[i] = fmt.Sprintf("payment-%d", i)
	}
	return values
}

// recordTopic puts the ten records at offsets 0-9 of the scenario's topic,
// which Prepare created. It returns the partition.
func (s *Script) recordTopic(ctx context.Context) (assignor.TopicPartition, error) {
	tp := lab.TP(s.group, 0)
	conn, err := s.rawConn(ctx)
	if err != nil {
		return tp, err
	}
	defer conn.Close()
	code, base, err := lab.Produce(ctx, conn, nil, tp, recordValues()...)
	if err != nil {
		return tp, err
	}
	if code != 0 || base != 0 {
		return tp, fmt.Errorf("the Produce answered %s at base offset %d, want NONE at 0", lab.CodeName(code), base)
	}
	return tp, nil
}

// recordMember joins a member of the script's group subscribed to tp's
// topic, which its plan (for a broker that follows the leader's) assigns,
// and insists that it is given tp.
func (s *Script) recordMember(ctx context.Context, tp assignor.TopicPartition, session time.Duration) (*lab.Member, error) {
	m, err := s.joinedWith(ctx, lab.MemberConfig{Topics: []string{tp.Topic}, Plan: map[string]int32{tp.Topic: 1}, SessionTimeout: session})
	if err != nil {
		return nil, err
	}
	if !slices.Equal(m.Assigned, []assignor.TopicPartition{tp}) {
		return nil, fmt.Errorf("member %s was assigned %v, want %s", m.ID, m.Assigned, tp)
	}
	return m, nil
}

// produceFetch: ten records in one batch, then ListOffsets (earliest and
// latest) and a Fetch from 0 and from 6.
func produceFetch(ctx context.Context, s *Script) (string, error) {
	tp, err := s.recordTopic(ctx)
	if err != nil {
		return "", err
	}
	conn, err := s.rawConn(ctx)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	var ends [2]int64
	for i, ts := range []int64{lab.ListOffsetsEarliest, lab.ListOffsetsLatest} {
		code, off, err := lab.ListOffset(ctx, conn, nil, tp, ts)
		if err != nil {
			return "", err
		}
		if code != 0 {
			return "ListOffsets " + lab.CodeName(code), nil
		}
		ends[i] = off
	}
	from0, err := fetchWords(ctx, conn, tp, 0)
	if err != nil {
		return "", err
	}
	from6, err := fetchWords(ctx, conn, tp, 6)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("offsets %d..%d; from 0: %s; from 6: %s", ends[0], ends[1], from0, from6), nil
}

// fetchWords fetches tp from offset and describes the answer: the offsets
// and values kept, the high watermark, and how many records before the
// offset the answer carried.
func fetchWords(ctx context.Context, conn *wireclient.Client, tp assignor.TopicPartition, offset int64) (string, error) {
	f, err := lab.Fetch(ctx, conn, nil, tp, offset)
	if err != nil {
		return "", err
	}
	if f.Code != 0 {
		return lab.CodeName(f.Code), nil
	}
	if len(f.Records) == 0 {
		return fmt.Sprintf("no records, high watermark %d", f.HighWatermark), nil
	}
	first, last := f.Records[0], f.Records[len(f.Records)-1]
	words := fmt.Sprintf("%d-%d (%s..%s), high watermark %d", first.Offset, last.Offset, first.Value, last.Value, f.HighWatermark)
	if f.Skipped > 0 {
		words += fmt.Sprintf(", %d earlier records of the batch dropped", f.Skipped)
	}
	return words, nil
}

// commitAndReplay is exercise 1: member A fetches the ten records, commits
// 6 and crashes (its connection closes; no commit, no leave). Once its
// session has ended, member B joins, reads the committed offset and
// fetches from there; its records are compared with A's, byte for byte.
func commitAndReplay(ctx context.Context, s *Script) (string, error) {
	tp, err := s.recordTopic(ctx)
	if err != nil {
		return "", err
	}
	a, err := s.recordMember(ctx, tp, recordSession)
	if err != nil {
		return "", err
	}
	fa, err := a.FetchRecords(ctx, tp, 0)
	if err != nil {
		return "", err
	}
	if fa.Code != 0 || len(fa.Records) != 10 {
		return "", fmt.Errorf("member A's Fetch answered %s with %d records, want 10", lab.CodeName(fa.Code), len(fa.Records))
	}
	if err := commitWant(ctx, a, a.ID, a.Generation, tp, 6, "NONE"); err != nil {
		return "", err
	}
	a.Close() // the crash: no commit, no leave
	if err := s.awaitExpired(ctx, a); err != nil {
		return "", err
	}
	b, err := s.recordMember(ctx, tp, 0)
	if err != nil {
		return "", err
	}
	start, err := committedOffset(ctx, b, tp)
	if err != nil {
		return "", err
	}
	fb, err := b.FetchRecords(ctx, tp, start)
	if err != nil {
		return "", err
	}
	same := "the same bytes"
	for _, r := range fb.Records {
		if !slices.ContainsFunc(fa.Records, func(x records.DecodedRecord) bool { return lab.SameRecord(x, r) }) {
			same = fmt.Sprintf("offset %d differs", r.Offset)
			break
		}
	}
	return fmt.Sprintf("B starts at %d and gets %s again, %s", start, offsetSpan(fb.Records), same), nil
}

// awaitExpired waits, asking with DescribeGroups from a connection of its
// own, until the broker has removed m from the group: its session ended.
// m is gone afterwards, with nothing to leave.
func (s *Script) awaitExpired(ctx context.Context, m *lab.Member) error {
	id := m.ID
	m.ID = ""
	watcher, err := s.memberWith(ctx, lab.MemberConfig{})
	if err != nil {
		return err
	}
	for {
		code, _, members, err := watcher.Describe(ctx)
		if err != nil {
			return err
		}
		if code == 0 && !slices.Contains(members, id) {
			return nil
		}
		if err := pause(ctx); err != nil {
			return fmt.Errorf("member %s never expired: %w", id, err)
		}
	}
}

// zombieCommit: A commits 6 and then sends nothing, not even a heartbeat,
// until its session has ended and the broker has removed it; B joins and
// commits 10; A, unaware, commits 8 with its old member id and
// generation.
func zombieCommit(ctx context.Context, s *Script) (string, error) {
	tp, err := s.recordTopic(ctx)
	if err != nil {
		return "", err
	}
	a, err := s.recordMember(ctx, tp, recordSession)
	if err != nil {
		return "", err
	}
	if err := commitWant(ctx, a, a.ID, a.Generation, tp, 6, "NONE"); err != nil {
		return "", err
	}
	aID, aGeneration := a.ID, a.Generation
	if err := s.awaitExpired(ctx, a); err != nil {
		return "", err
	}
	b, err := s.recordMember(ctx, tp, 0)
	if err != nil {
		return "", err
	}
	if err := commitWant(ctx, b, b.ID, b.Generation, tp, 10, "NONE"); err != nil {
		return "", err
	}
	code, err := commitCode(ctx, a, aID, aGeneration, lab.PartitionOffset{TopicPartition: tp, Offset: 8})
	if err != nil {
		return "", err
	}
	after, err := committedOffset(ctx, b, tp)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("zombie's commit of 8 %s; committed %d", code, after), nil
}

// directCommitBackwards: B, the group's only member, commits 10; then a
// direct commit (generation -1, no member id) of 8 arrives, as a zombie's
// would where nothing fences it. B commits 10 again and leaves, and the
// same direct commit arrives at the Empty group.
func directCommitBackwards(ctx context.Context, s *Script) (string, error) {
	tp, err := s.recordTopic(ctx)
	if err != nil {
		return "", err
	}
	b, err := s.recordMember(ctx, tp, 0)
	if err != nil {
		return "", err
	}
	if err := commitWant(ctx, b, b.ID, b.Generation, tp, 10, "NONE"); err != nil {
		return "", err
	}
	withMember, err := directCommitOf8(ctx, b, tp)
	if err != nil {
		return "", err
	}
	if err := commitWant(ctx, b, b.ID, b.Generation, tp, 10, "NONE"); err != nil {
		return "", err
	}
	if err := leaveWant(ctx, b); err != nil {
		return "", err
	}
	empty, err := directCommitOf8(ctx, b, tp)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("over 10, with a member: %s; into the Empty group: %s", withMember, empty), nil
}

// directCommitOf8 sends a direct commit of 8 for tp and reports its code
// and the committed offset after it.
func directCommitOf8(ctx context.Context, m *lab.Member, tp assignor.TopicPartition) (string, error) {
	code, err := commitCode(ctx, m, "", -1, lab.PartitionOffset{TopicPartition: tp, Offset: 8})
	if err != nil {
		return "", err
	}
	after, err := committedOffset(ctx, m, tp)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%s, committed %d", code, after), nil
}

// leaveWant makes m leave and insists that it succeeds; m then has nothing
// to leave.
func leaveWant(ctx context.Context, m *lab.Member) error {
	top, codes, err := m.Leave(ctx)
	if err != nil {
		return err
	}
	if top != 0 || len(codes) != 1 || codes[0] != 0 {
		return fmt.Errorf("LeaveGroup answered %s %v", lab.CodeName(top), codes)
	}
	m.ID = ""
	return nil
}

// commitWant commits offset for tp as memberID under generation and
// insists on the code.
func commitWant(ctx context.Context, m *lab.Member, memberID string, generation int32, tp assignor.TopicPartition, offset int64, want string) error {
	code, err := commitCode(ctx, m, memberID, generation, lab.PartitionOffset{TopicPartition: tp, Offset: offset})
	if err != nil {
		return err
	}
	if code != want {
		return fmt.Errorf("OffsetCommit of %d by %q at generation %d answered %s, want %s", offset, memberID, generation, code, want)
	}
	return nil
}

// committedOffset reads the group's committed offset of tp.
func committedOffset(ctx context.Context, m *lab.Member, tp assignor.TopicPartition) (int64, error) {
	code, got, err := m.Fetch(ctx, tp)
	if err != nil {
		return 0, err
	}
	if code != 0 || len(got) != 1 {
		return 0, fmt.Errorf("OffsetFetch answered %s with %d partitions", lab.CodeName(code), len(got))
	}
	return got[0].Offset, nil
}

// offsetSpan renders fetched records' offsets: "6-9".
func offsetSpan(recs []records.DecodedRecord) string {
	if len(recs) == 0 {
		return "nothing"
	}
	return fmt.Sprintf("%d-%d", recs[0].Offset, recs[len(recs)-1].Offset)
}
