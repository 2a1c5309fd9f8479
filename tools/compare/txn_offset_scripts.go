package compare

// Transactional offset commits beside kfake: the commits no generation
// fences (TxnOffsetCommit below v3, or v3 without a member), and when
// staged offsets start to count.

import (
	"context"
	"fmt"

	"github.com/minibroker/minibroker/assignor"
	"github.com/minibroker/minibroker/tools/lab"
)

// txnOffsetCommitUnfenced: a group with one member, which owns orders; a
// transaction stages orders-0 with TxnOffsetCommit v2 (no generation
// fields), orders-1 with v3 at generation -1 and no member id, and
// partition 9 of orders (which it lacks) the same way; then commits, and
// the group's committed offsets are read.
func txnOffsetCommitUnfenced(ctx context.Context, s *Script) (string, error) {
	m, err := s.joined(ctx, s.topic("orders"))
	if err != nil {
		return "", err
	}
	p, err := s.txnProducer(ctx, "unfenced")
	if err != nil {
		return "", err
	}
	if err := p.addGroup(ctx, s.group); err != nil {
		return "", err
	}
	orders := s.topic("orders")
	v2, err := p.stageAt(ctx, 2, s.group, "", -1, lab.TP(orders, 0), 5)
	if err != nil {
		return "", err
	}
	v3, err := p.stage(ctx, s.group, "", -1, lab.TP(orders, 1), 6)
	if err != nil {
		return "", err
	}
	missing, err := p.stage(ctx, s.group, "", -1, lab.TP(orders, 9), 7)
	if err != nil {
		return "", err
	}
	if err := wantNone("EndTxn commit")(p.end(ctx, true)); err != nil {
		return "", err
	}
	committed, err := committedWords(ctx, m, lab.TP(orders, 0), lab.TP(orders, 1))
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("beside a member of generation %d: v2 %s, v3 without a member %s, a partition orders lacks %s; committed %s",
		m.Generation, v2, v3, missing, committed), nil
}

// committedWords reads the group's committed offsets of parts: "5, 6",
// -1 for none.
func committedWords(ctx context.Context, m fetcher, parts ...assignor.TopicPartition) (string, error) {
	code, got, err := m.Fetch(ctx, parts...)
	if err != nil {
		return "", err
	}
	if code != 0 || len(got) != len(parts) {
		return "", fmt.Errorf("OffsetFetch answered %s with %d partitions for %d", lab.CodeName(code), len(got), len(parts))
	}
	w := ""
	for i, po := range got {
		if i > 0 {
			w += ", "
		}
		w += fmt.Sprint(po.Offset)
	}
	return w, nil
}

// txnStagedOffsets: a direct commit of orders-3 makes the group (kfake
// answers OffsetFetch of a group it does not hold with
// GROUP_ID_NOT_FOUND); then a transaction stages offset 5 for orders-2
// (no member) and the group's committed offset is read before and after
// EndTxn commit; a second transaction stages 9 and aborts.
func txnStagedOffsets(ctx context.Context, s *Script) (string, error) {
	tp := lab.TP(s.topic("orders"), 2)
	m, err := s.memberWith(ctx, lab.MemberConfig{})
	if err != nil {
		return "", err
	}
	if err := wantNone("the direct commit")(commitCode(ctx, m, "", -1, lab.PartitionOffset{TopicPartition: lab.TP(tp.Topic, 3), Offset: 1})); err != nil {
		return "", err
	}
	p, err := s.txnProducer(ctx, "staged")
	if err != nil {
		return "", err
	}
	var words []string
	for _, step := range []struct {
		offset int64
		commit bool
	}{{5, true}, {9, false}} {
		if err := p.addGroup(ctx, s.group); err != nil {
			return "", err
		}
		if err := wantNone("TxnOffsetCommit")(p.stage(ctx, s.group, "", -1, tp, step.offset)); err != nil {
			return "", err
		}
		staged, err := committedWords(ctx, m, tp)
		if err != nil {
			return "", err
		}
		if err := wantNone("EndTxn")(p.end(ctx, step.commit)); err != nil {
			return "", err
		}
		ended, err := committedWords(ctx, m, tp)
		if err != nil {
			return "", err
		}
		what := map[bool]string{true: "commit", false: "abort"}[step.commit]
		words = append(words, fmt.Sprintf("%d staged: committed %s, after %s %s", step.offset, staged, what, ended))
	}
	return fmt.Sprintf("%s; %s", words[0], words[1]), nil
}
