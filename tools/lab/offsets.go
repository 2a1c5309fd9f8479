package lab

import (
	"context"
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/assignor"
	"github.com/minibroker/minibroker/wireclient"
)

// PartitionOffset is one partition's offset in a commit or a fetch: the
// next offset the group will consume.
type PartitionOffset struct {
	assignor.TopicPartition
	Offset int64
}

// PartitionCode is one partition's error code in a commit answer.
type PartitionCode struct {
	assignor.TopicPartition
	Code int16
}

// OneCode returns the code every partition carries, and false when the
// partitions disagree or there are none.
func OneCode(codes []PartitionCode) (int16, bool) {
	if len(codes) == 0 {
		return 0, false
	}
	for _, pc := range codes[1:] {
		if pc.Code != codes[0].Code {
			return 0, false
		}
	}
	return codes[0].Code, true
}

// Commit commits offs as this member, under generation.
func (m *Member) Commit(ctx context.Context, generation int32, offs ...PartitionOffset) ([]PartitionCode, error) {
	return m.CommitAs(ctx, m.ID, generation, offs...)
}

// CommitAs sends one OffsetCommit naming any member id and generation:
// generation -1 with an empty member id is a direct commit (a consumer
// with a manual assignment). It returns each partition's code in request
// order.
func (m *Member) CommitAs(ctx context.Context, memberID string, generation int32, offs ...PartitionOffset) ([]PartitionCode, error) {
	return sendCommit(ctx, m.conn, m.tracef, m.cfg.Group, memberID, m.cfg.InstanceID, "generation", generation, offs)
}

// sendCommit sends one OffsetCommit v9 on conn for group, naming memberID,
// the instance id of a static member (none when empty) and generation (a
// consumer-protocol member's epoch, which label names in the trace), and
// returns each partition's code in request order.
func sendCommit(ctx context.Context, conn *wireclient.Client, tracef func(string, ...any), group, memberID, instance, label string, generation int32, offs []PartitionOffset) ([]PartitionCode, error) {
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Version = OffsetCommitVersion
	req.Group = group
	req.MemberID = memberID
	req.Generation = generation
	shown := ""
	if instance != "" {
		req.InstanceID, shown = kmsg.StringPtr(instance), " instance="+instance
	}
	for _, po := range offs {
		n := len(req.Topics)
		if n == 0 || req.Topics[n-1].Topic != po.Topic {
			t := kmsg.NewOffsetCommitRequestTopic()
			t.Topic = po.Topic
			req.Topics = append(req.Topics, t)
			n++
		}
		p := kmsg.NewOffsetCommitRequestTopicPartition()
		p.Partition, p.Offset = po.Partition, po.Offset
		req.Topics[n-1].Partitions = append(req.Topics[n-1].Partitions, p)
	}
	tracef("  > OffsetCommit v%d member=%s%s %s=%d %s", req.Version, quoteID(memberID), shown, label, generation, offsetList(offs))
	resp, err := Request[*kmsg.OffsetCommitResponse](ctx, conn, req)
	if err != nil {
		return nil, err
	}
	var codes []PartitionCode
	var b strings.Builder
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			tp := assignor.TopicPartition{Topic: t.Topic, Partition: p.Partition}
			codes = append(codes, PartitionCode{TopicPartition: tp, Code: p.ErrorCode})
			fmt.Fprintf(&b, " %s=%s", tp, CodeName(p.ErrorCode))
		}
	}
	tracef("  < OffsetCommit v%d%s", resp.Version, b.String())
	return codes, nil
}

// Fetch sends one OffsetFetch for the member's group and returns the
// group's error code and the committed offset of each named partition
// (-1 for none), in request order.
func (m *Member) Fetch(ctx context.Context, parts ...assignor.TopicPartition) (int16, []PartitionOffset, error) {
	return sendFetch(ctx, m.conn, m.tracef, m.cfg.Group, parts)
}

// sendFetch sends one OffsetFetch v8 on conn for group's committed offsets
// of parts, as an admin reads them (no member id, epoch -1).
func sendFetch(ctx context.Context, conn *wireclient.Client, tracef func(string, ...any), group string, parts []assignor.TopicPartition) (int16, []PartitionOffset, error) {
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Version = OffsetFetchVersion
	g := kmsg.NewOffsetFetchRequestGroup()
	g.Group = group
	for _, tp := range parts {
		n := len(g.Topics)
		if n == 0 || g.Topics[n-1].Topic != tp.Topic {
			t := kmsg.NewOffsetFetchRequestGroupTopic()
			t.Topic = tp.Topic
			g.Topics = append(g.Topics, t)
			n++
		}
		g.Topics[n-1].Partitions = append(g.Topics[n-1].Partitions, tp.Partition)
	}
	req.Groups = []kmsg.OffsetFetchRequestGroup{g}
	tracef("  > OffsetFetch v%d group=%s %s", req.Version, group, compact(parts))
	resp, err := Request[*kmsg.OffsetFetchResponse](ctx, conn, req)
	if err != nil {
		return 0, nil, err
	}
	if len(resp.Groups) != 1 {
		return 0, nil, fmt.Errorf("lab: OffsetFetch answered %d groups, want 1", len(resp.Groups))
	}
	rg := resp.Groups[0]
	var out []PartitionOffset
	for _, t := range rg.Topics {
		for _, p := range t.Partitions {
			out = append(out, PartitionOffset{
				TopicPartition: assignor.TopicPartition{Topic: t.Topic, Partition: p.Partition},
				Offset:         p.Offset,
			})
		}
	}
	tracef("  < OffsetFetch v%d %s %s", resp.Version, CodeName(rg.ErrorCode), offsetList(out))
	return rg.ErrorCode, out, nil
}
