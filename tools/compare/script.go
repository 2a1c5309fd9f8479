package compare

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/minibroker/minibroker/assignor"
	"github.com/minibroker/minibroker/tools/lab"
	"github.com/minibroker/minibroker/wireclient"
)

// Script is one scenario's run against one broker: the group it owns and
// the members it dialled, which Close makes leave, and the raw connections
// it opened, which Close closes.
type Script struct {
	addr      string
	group     string
	names     lab.Scope // the run's names for the chapter's topics
	members   []*lab.Member
	consumers []*lab.ConsumerMember // consumer-protocol (KIP-848) members
	conns     []*wireclient.Client
}

// topic is the run's name for the chapter's topic name (orders,
// payments): the name itself on a broker of the comparison's own, one of
// the run's on a shared broker (lab.Scope.RunTopic).
func (s *Script) topic(name string) string { return s.names.RunTopic(name) }

// pollInterval is how often a script re-asks while it waits for a broker
// to act on its own (a rebalance, a session expiry).
const pollInterval = 5 * time.Millisecond

// member dials a new member of the script's group subscribed to topics,
// with the defaults of lab.MemberConfig and a leader plan over Topics.
func (s *Script) member(ctx context.Context, topics ...string) (*lab.Member, error) {
	return s.memberWith(ctx, lab.MemberConfig{Topics: topics})
}

// memberWith dials a member with cfg, filling in the group (unless cfg
// names one), the client id and the plan catalog (Topics, unless cfg
// names one).
func (s *Script) memberWith(ctx context.Context, cfg lab.MemberConfig) (*lab.Member, error) {
	if cfg.Group == "" {
		cfg.Group = s.group
	}
	cfg.ClientID = "compare"
	if cfg.Plan == nil {
		cfg.Plan = s.names.RunTopics(Topics())
	}
	m, err := lab.Dial(ctx, s.addr, cfg)
	if err != nil {
		return nil, err
	}
	s.members = append(s.members, m)
	return m, nil
}

// joined dials a member, joins and syncs it, and insists that both work.
func (s *Script) joined(ctx context.Context, topics ...string) (*lab.Member, error) {
	return s.joinedWith(ctx, lab.MemberConfig{Topics: topics})
}

// joinedWith is joined for a member configured by cfg.
func (s *Script) joinedWith(ctx context.Context, cfg lab.MemberConfig) (*lab.Member, error) {
	m, err := s.memberWith(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if err := want(m.Join(ctx))("JoinGroup", 0); err != nil {
		return nil, err
	}
	if err := want(m.Sync(ctx))("SyncGroup", 0); err != nil {
		return nil, err
	}
	return m, nil
}

// Close makes every member that has an id leave (best effort, so that a
// broker that outlives the run keeps no member of it) and closes their
// connections.
func (s *Script) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	for _, m := range s.members {
		if m.ID != "" {
			m.Leave(ctx)
		}
		m.Close()
	}
	for _, m := range s.consumers {
		if m.Epoch > 0 {
			m.Leave(ctx)
		}
		m.Close()
	}
	for _, c := range s.conns {
		c.Close()
	}
}

// want turns a (code, err) pair into a check against the code expected.
func want(code int16, err error) func(what string, expected int16) error {
	return func(what string, expected int16) error {
		if err != nil {
			return err
		}
		if code != expected {
			return fmt.Errorf("%s answered %s, want %s", what, lab.CodeName(code), lab.CodeName(expected))
		}
		return nil
	}
}

// pair is a group of two members after a rebalance both took part in, the
// way real clients get there: the second member joins, the first learns
// of it from its heartbeat and re-joins, and both sync, the leader first.
type pair struct {
	first, second *lab.Member
	oldGeneration int32                     // first's generation before second joined
	oldAssigned   []assignor.TopicPartition // first's partitions before second joined
	notice        int16                     // first's heartbeat answer once second joined
}

// twoMembers builds a pair subscribed to orders.
func (s *Script) twoMembers(ctx context.Context) (*pair, error) {
	return s.twoMembersWith(ctx, lab.MemberConfig{Topics: []string{s.topic("orders")}})
}

// twoMembersWith builds a pair whose first member, the group's leader, is
// configured by firstCfg; the second subscribes to orders.
func (s *Script) twoMembersWith(ctx context.Context, firstCfg lab.MemberConfig) (*pair, error) {
	first, err := s.joinedWith(ctx, firstCfg)
	if err != nil {
		return nil, err
	}
	p := &pair{first: first, oldGeneration: first.Generation, oldAssigned: slices.Clone(first.Assigned)}
	if p.second, err = s.member(ctx, s.topic("orders")); err != nil {
		return nil, err
	}
	if err := want(p.second.JoinOnce(ctx))("first JoinGroup", kerr.MemberIDRequired.Code); err != nil {
		return nil, err
	}
	joined := async(func() (int16, error) { return p.second.JoinOnce(ctx) })
	if p.notice, err = awaitRebalance(ctx, first); err != nil {
		abandon(p.second, joined)
		return nil, err
	}
	if err := want(first.JoinOnce(ctx))("re-join", 0); err != nil {
		abandon(p.second, joined)
		return nil, err
	}
	if err := want((<-joined).get())("second JoinGroup", 0); err != nil {
		return nil, err
	}
	if first.Generation != p.second.Generation {
		return nil, fmt.Errorf("members joined generations %d and %d", first.Generation, p.second.Generation)
	}
	return p, syncAll(ctx, first, p.second)
}

// leader returns whichever of the pair leads the group, and the other.
func (p *pair) leader() (leader, follower *lab.Member) {
	if p.second.ID == p.second.Leader {
		return p.second, p.first
	}
	return p.first, p.second
}

// syncAll syncs members, the leader first: behind a join barrier a
// follower's SyncGroup waits for the leader's plan.
func syncAll(ctx context.Context, members ...*lab.Member) error {
	members = slices.Clone(members)
	slices.SortStableFunc(members, func(a, b *lab.Member) int {
		switch {
		case a.ID == a.Leader && b.ID != b.Leader:
			return -1
		case b.ID == b.Leader && a.ID != a.Leader:
			return 1
		}
		return 0
	})
	for _, m := range members {
		if err := want(m.Sync(ctx))("SyncGroup", 0); err != nil {
			return err
		}
	}
	return nil
}

// awaitRebalance heartbeats as m, under m's generation, until the broker
// answers anything but NONE, and returns that answer: how a real client
// learns that the group is rebalancing (Kafka: REBALANCE_IN_PROGRESS) or
// has already rebalanced (minibroker: ILLEGAL_GENERATION).
func awaitRebalance(ctx context.Context, m *lab.Member) (int16, error) {
	for {
		code, err := m.Heartbeat(ctx, m.Generation)
		if err != nil || code != 0 {
			return code, err
		}
		if err := pause(ctx); err != nil {
			return 0, fmt.Errorf("no rebalance seen: %w", err)
		}
	}
}

// pause waits one poll interval, or until ctx ends.
func pause(ctx context.Context) error { return pauseFor(ctx, pollInterval) }

// pauseFor waits d, or until ctx ends.
func pauseFor(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// result is a (code, error) pair delivered by async.
type result struct {
	code int16
	err  error
}

func (r result) get() (int16, error) { return r.code, r.err }

// abandon gives up on a join that async is running for m: it closes m's
// connection, which ends the join, and waits for the goroutine, so that
// nothing else touches m meanwhile.
func abandon(m *lab.Member, joined <-chan result) {
	m.Close()
	<-joined
}

// async runs fn in a goroutine: for a JoinGroup that, behind a join
// barrier, returns only once other members re-join.
func async(fn func() (int16, error)) <-chan result {
	ch := make(chan result, 1)
	go func() {
		code, err := fn()
		ch <- result{code, err}
	}()
	return ch
}

// offsetsOf gives each partition a distinct offset to commit.
func offsetsOf(parts []assignor.TopicPartition) []lab.PartitionOffset {
	out := make([]lab.PartitionOffset, len(parts))
	for i, tp := range parts {
		out[i] = lab.PartitionOffset{TopicPartition: tp, Offset: 100 + int64(i)}
	}
	return out
}

// commitCode commits offs as memberID under generation and returns the
// one code every partition carries.
func commitCode(ctx context.Context, m *lab.Member, memberID string, generation int32, offs ...lab.PartitionOffset) (string, error) {
	codes, err := m.CommitAs(ctx, memberID, generation, offs...)
	if err != nil {
		return "", err
	}
	code, ok := lab.OneCode(codes)
	if !ok || len(codes) != len(offs) {
		return "", fmt.Errorf("OffsetCommit answered %v for %d partitions: not one code for all", codes, len(offs))
	}
	return lab.CodeName(code), nil
}

// fetcher reads a group's committed offsets: a lab.Member or a
// lab.ConsumerMember.
type fetcher interface {
	Fetch(ctx context.Context, parts ...assignor.TopicPartition) (int16, []lab.PartitionOffset, error)
}

// storedWord reports whether the group's committed offsets for offs are
// exactly offs ("stored"), all absent ("not stored"), or something else.
func storedWord(ctx context.Context, m fetcher, offs ...lab.PartitionOffset) (string, error) {
	parts := make([]assignor.TopicPartition, len(offs))
	for i, po := range offs {
		parts[i] = po.TopicPartition
	}
	code, got, err := m.Fetch(ctx, parts...)
	if err != nil {
		return "", err
	}
	if code != 0 {
		return "", fmt.Errorf("OffsetFetch answered %s", lab.CodeName(code))
	}
	switch {
	case slices.Equal(got, offs):
		return "stored", nil
	case !slices.ContainsFunc(got, func(po lab.PartitionOffset) bool { return po.Offset != -1 }):
		return "not stored", nil
	}
	return "", fmt.Errorf("OffsetFetch answered %v after a commit of %v", got, offs)
}

// errClosed marks a connection the broker closed.
var errClosed = errors.New("connection closed")

// codeName turns a (code, err) pair into the code's name.
func codeName(code int16, err error) (string, error) {
	if err != nil {
		return "", err
	}
	return lab.CodeName(code), nil
}
