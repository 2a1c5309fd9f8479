package lab

// ConsumerMember: a member of a consumer group (KIP-848) driven by hand
// with raw ConsumerGroupHeartbeat requests, for the labs' consumer-protocol
// variants and the comparison scenarios (docs/design.md section 9).

import (
	"context"
	"fmt"
	"io"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/assignor"
	"github.com/minibroker/minibroker/wireclient"
)

// The versions a ConsumerMember sends: v1 of the consumer protocol's two
// APIs (the client makes its own member id, as Kafka 4 requires), and
// Metadata v12 for the topic ids the protocol names topics by.
const (
	ConsumerGroupHeartbeatVersion int16 = 1
	ConsumerGroupDescribeVersion  int16 = 1
	MetadataVersion               int16 = 12
)

// joinRebalanceTimeout is the rebalance timeout a join reports: how long
// Kafka lets a member take to release partitions. minibroker has no
// revocation step and only checks that it is there.
const joinRebalanceTimeout = 60000

// ConsumerConfig describes one consumer-protocol member. Zero fields mean
// the default.
type ConsumerConfig struct {
	// Group and MemberID are required: with ConsumerGroupHeartbeat v1 the
	// client makes its own member id.
	Group    string
	MemberID string
	// ClientID goes in every request header. Default "lab".
	ClientID string
	// Topics is the subscription a join sends.
	Topics []string
	// Assignor is the server assignor a join asks for; "" asks for none
	// (the broker's default).
	Assignor string
	// Trace receives one line per request sent and per response received.
	// Nil: silent.
	Trace io.Writer
}

// ConsumerMember is one consumer-protocol member on its own connection.
// Each method sends exactly one request. Its exported fields are its
// local view, which changes only when an answer tells the member
// something: a member believes it owns what the last assignment it was
// sent says, whatever has happened in the group since.
//
// A ConsumerMember is owned by one goroutine at a time.
type ConsumerMember struct {
	// Epoch is the member epoch of the last answer that carried one (0
	// before the member joins, -1 once it has left).
	Epoch int32
	// Assigned is the last assignment the member was sent, sorted.
	Assigned []assignor.TopicPartition

	cfg   ConsumerConfig
	conn  *wireclient.Client
	ids   map[string][16]byte // topic ids from Metadata
	names map[[16]byte]string
}

// DialConsumer connects a new member to addr and reads the broker's topic
// ids (Metadata, not traced). It has not joined yet.
func DialConsumer(ctx context.Context, addr string, cfg ConsumerConfig) (*ConsumerMember, error) {
	if cfg.Group == "" || cfg.MemberID == "" {
		return nil, fmt.Errorf("lab: ConsumerConfig.Group and MemberID are required")
	}
	if cfg.ClientID == "" {
		cfg.ClientID = "lab"
	}
	conn, err := wireclient.Dial(ctx, addr, cfg.ClientID)
	if err != nil {
		return nil, err
	}
	m := &ConsumerMember{cfg: cfg, conn: conn}
	if err := m.readTopicIDs(ctx); err != nil {
		conn.Close()
		return nil, err
	}
	return m, nil
}

// ID returns the member id.
func (m *ConsumerMember) ID() string { return m.cfg.MemberID }

// Close closes the member's connection. It does not leave the group.
func (m *ConsumerMember) Close() error { return m.conn.Close() }

func (m *ConsumerMember) tracef(format string, args ...any) {
	if m.cfg.Trace != nil {
		fmt.Fprintf(m.cfg.Trace, format+"\n", args...)
	}
}

// readTopicIDs asks Metadata for every topic's id.
func (m *ConsumerMember) readTopicIDs(ctx context.Context) error {
	req := kmsg.NewPtrMetadataRequest()
	req.Version = MetadataVersion
	resp, err := Request[*kmsg.MetadataResponse](ctx, m.conn, req)
	if err != nil {
		return err
	}
	m.ids, m.names = map[string][16]byte{}, map[[16]byte]string{}
	for _, t := range resp.Topics {
		if t.Topic != nil && t.ErrorCode == 0 {
			m.ids[*t.Topic], m.names[t.TopicID] = t.TopicID, *t.Topic
		}
	}
	return nil
}

// TopicID returns the id Metadata gave topic when the member dialled.
func (m *ConsumerMember) TopicID(topic string) ([16]byte, bool) {
	id, ok := m.ids[topic]
	return id, ok
}

// Join sends a join (member epoch 0) as a Kafka 4 client does: the
// rebalance timeout, the subscription, the server assignor and an empty
// list of owned partitions. A successful answer sets Epoch and Assigned.
// A member that has joined before re-joins under its id.
func (m *ConsumerMember) Join(ctx context.Context) (int16, error) {
	req := m.request(0)
	req.RebalanceTimeoutMillis = joinRebalanceTimeout
	req.SubscribedTopicNames = slices.Clone(m.cfg.Topics)
	if req.SubscribedTopicNames == nil {
		req.SubscribedTopicNames = []string{}
	}
	req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	line := fmt.Sprintf("  > ConsumerGroupHeartbeat v%d member=%s epoch=0 topics=%s", req.Version, m.ID(), list(m.cfg.Topics))
	if m.cfg.Assignor != "" {
		req.ServerAssignor = &m.cfg.Assignor
		line += " assignor=" + m.cfg.Assignor
	}
	m.tracef("%s", line)
	return m.send(ctx, req)
}

// Heartbeat sends a heartbeat at the member's epoch, reporting the
// partitions it owns (Assigned), as a client does once it has applied an
// assignment.
func (m *ConsumerMember) Heartbeat(ctx context.Context) (int16, error) {
	return m.HeartbeatAt(ctx, m.Epoch)
}

// HeartbeatAt is Heartbeat at any epoch: a stale one, to be fenced, or a
// previous one, as a client whose last answer was lost sends.
func (m *ConsumerMember) HeartbeatAt(ctx context.Context, epoch int32) (int16, error) {
	req := m.request(epoch)
	req.Topics = m.owned()
	m.tracef("  > ConsumerGroupHeartbeat v%d member=%s epoch=%d owned=%s", req.Version, m.ID(), epoch, compact(m.Assigned))
	return m.send(ctx, req)
}

// Leave sends a leave (member epoch -1).
func (m *ConsumerMember) Leave(ctx context.Context) (int16, error) {
	req := m.request(-1)
	m.tracef("  > ConsumerGroupHeartbeat v%d member=%s epoch=-1 (leave)", req.Version, m.ID())
	return m.send(ctx, req)
}

// request is a ConsumerGroupHeartbeat of the member at epoch that carries
// nothing else.
func (m *ConsumerMember) request(epoch int32) *kmsg.ConsumerGroupHeartbeatRequest {
	req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	req.Version = ConsumerGroupHeartbeatVersion
	req.Group, req.MemberID, req.MemberEpoch = m.cfg.Group, m.ID(), epoch
	return req
}

// owned is Assigned by topic id, never nil: the partitions a heartbeat
// reports.
func (m *ConsumerMember) owned() []kmsg.ConsumerGroupHeartbeatRequestTopic {
	out := []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	for _, tp := range m.Assigned {
		n := len(out)
		if id := m.ids[tp.Topic]; n == 0 || out[n-1].TopicID != id {
			out = append(out, kmsg.ConsumerGroupHeartbeatRequestTopic{TopicID: id})
			n++
		}
		out[n-1].Partitions = append(out[n-1].Partitions, tp.Partition)
	}
	return out
}

// send sends req, traces the answer and applies it to the local view.
func (m *ConsumerMember) send(ctx context.Context, req *kmsg.ConsumerGroupHeartbeatRequest) (int16, error) {
	resp, err := Request[*kmsg.ConsumerGroupHeartbeatResponse](ctx, m.conn, req)
	if err != nil {
		return 0, err
	}
	if resp.ErrorCode != 0 {
		m.tracef("  < ConsumerGroupHeartbeat v%d %s", resp.Version, CodeName(resp.ErrorCode))
		return resp.ErrorCode, nil
	}
	m.Epoch = resp.MemberEpoch
	line := fmt.Sprintf("  < ConsumerGroupHeartbeat v%d NONE epoch=%d", resp.Version, resp.MemberEpoch)
	if resp.Assignment != nil {
		parts, err := m.byName(ctx, resp.Assignment.Topics)
		if err != nil {
			return 0, err
		}
		m.Assigned = parts
		line += " assignment=" + compact(parts)
	} else if resp.MemberEpoch >= 0 {
		line += " (no assignment: unchanged)"
	}
	m.tracef("%s", line)
	return 0, nil
}

// byName turns an assignment by topic id into sorted partitions, asking
// Metadata again for an id it does not know (a topic created since).
func (m *ConsumerMember) byName(ctx context.Context, topics []kmsg.ConsumerGroupHeartbeatResponseAssignmentTopic) ([]assignor.TopicPartition, error) {
	var out []assignor.TopicPartition
	for _, t := range topics {
		name, ok := m.names[t.TopicID]
		if !ok {
			if err := m.readTopicIDs(ctx); err != nil {
				return nil, err
			}
			if name, ok = m.names[t.TopicID]; !ok {
				return nil, fmt.Errorf("lab: assignment names topic id %x, which Metadata does not know", t.TopicID)
			}
		}
		for _, p := range t.Partitions {
			out = append(out, assignor.TopicPartition{Topic: name, Partition: p})
		}
	}
	slices.SortFunc(out, assignor.TopicPartition.Compare)
	return out, nil
}

// Commit sends one OffsetCommit v9 for offs at member epoch epoch (which
// OffsetCommit carries in its generation field) and returns each
// partition's code in request order.
func (m *ConsumerMember) Commit(ctx context.Context, epoch int32, offs ...PartitionOffset) ([]PartitionCode, error) {
	return sendCommit(ctx, m.conn, m.tracef, m.cfg.Group, m.ID(), "", "epoch", epoch, offs)
}

// Fetch reads the group's committed offsets of parts, as Member.Fetch.
func (m *ConsumerMember) Fetch(ctx context.Context, parts ...assignor.TopicPartition) (int16, []PartitionOffset, error) {
	return sendFetch(ctx, m.conn, m.tracef, m.cfg.Group, parts)
}
