package admin

// GET /v1/groups and GET /v1/groups/{group}: the coordinator's view of
// each group (coordinator.Describe), its committed offsets
// (coordinator.Committed), who owns each partition of the topics its
// members subscribe to, and, per partition, the chapter's four states side
// by side (partitions.go): the log's offsets, the owner in this
// generation, the members' fetch positions and the committed offset, with
// the lag between the log end and the commit. A consumer (KIP-848) group
// also shows its epochs and assignor, and each member its epoch and its
// share of the target beside what it holds now (docs/design.md section
// 9).

import (
	"fmt"
	"net/http"
	"slices"

	"github.com/minibroker/minibroker/assignor"
	"github.com/minibroker/minibroker/coordinator"
)

// groupsJSON answers GET /v1/groups.
type groupsJSON struct {
	Now    string      `json:"now"`
	NowMS  int64       `json:"now_ms"`
	Clock  string      `json:"clock"` // "manual" or "real"
	Groups []groupJSON `json:"groups"`
}

// groupAtJSON answers GET /v1/groups/{group}: the group and the clock's
// reading, so deadlines can be read against it.
type groupAtJSON struct {
	Now   string `json:"now"`
	NowMS int64  `json:"now_ms"`
	groupJSON
}

// groupJSON is one group.
type groupJSON struct {
	Group string `json:"group"`
	// Type is the protocol the members speak: "classic" or "consumer"
	// (KIP-848).
	Type  string `json:"type"`
	State string `json:"state"` // Empty, PreparingRebalance, Stable; Reconciling (consumer groups)
	// Generation is a classic group's generation, or a consumer group's
	// group epoch.
	Generation int32  `json:"generation"`
	Protocol   string `json:"protocol"` // classic: the chosen assignor protocol; "" when Empty
	Leader     string `json:"leader"`   // classic only
	// GroupEpoch, AssignmentEpoch and Assignor: consumer groups only (absent
	// for classic ones). The assignment epoch is the epoch of the target
	// assignment; Assignor is the server assignor the group uses.
	GroupEpoch      *int32 `json:"group_epoch,omitzero"`
	AssignmentEpoch *int32 `json:"assignment_epoch,omitzero"`
	Assignor        string `json:"assignor,omitzero"`
	// Members are sorted by member id.
	Members []memberJSON `json:"members"`
	// Ownership lists every partition of every topic a member subscribes
	// to, sorted, with its owner ("" when no member holds it).
	Ownership []ownerJSON `json:"ownership"`
	// Committed is the group's durable committed offsets, sorted.
	Committed []committedJSON `json:"committed"`
	// Partitions is every partition of every topic a member subscribes
	// to or the group has committed offsets for, sorted, with its state.
	Partitions []partitionJSON `json:"partitions"`
	// TotalLag is the group's lag, the sum of its partitions' lags: the
	// figure minibroker_group_lag reports (a commit past the log end
	// counts negative, a reset sentinel not at all); null when no
	// partition has a lag.
	TotalLag *int64 `json:"total_lag"`
	// LastActivity is the group's latest rebalance, fencing rejection or
	// commit since the broker started; null when none is known.
	LastActivity *activityJSON `json:"last_activity"`
	// DoubleOwnership is how many partitions two members both believe
	// they own now, from their fetches (ownership.go).
	DoubleOwnership doubleOwnershipJSON `json:"double_ownership"`
	// Generations is the reason of every generation the event timeline
	// still holds (GET /v1/events), oldest first, with each static
	// member's restart, which keeps its generation.
	Generations []generationJSON `json:"generations"`
}

// memberJSON is one member: its subscription, its session lease and its
// assignment in the current generation (a consumer group member: what it
// holds at its member epoch).
type memberJSON struct {
	MemberID string `json:"member_id"`
	// InstanceID is a static member's group instance id (absent for a
	// dynamic member).
	InstanceID       string `json:"instance_id,omitzero"`
	ClientID         string `json:"client_id"`
	ClientHost       string `json:"client_host"`
	SessionTimeoutMS int64  `json:"session_timeout_ms"`
	// Deadline is when the lease runs out: the member is expired by the
	// first expiry step that runs strictly after it.
	Deadline     string                `json:"deadline"`
	DeadlineMS   int64                 `json:"deadline_ms"`
	Subscription []string              `json:"subscription"`
	Assignment   []topicPartitionsJSON `json:"assignment"`
	// MemberEpoch and TargetAssignment: consumer groups only (absent for
	// classic ones). A member whose epoch lags the group epoch gets its
	// target, whole, at its next heartbeat.
	MemberEpoch      *int32                `json:"member_epoch,omitzero"`
	TargetAssignment []topicPartitionsJSON `json:"target_assignment,omitzero"`
	// Regex is a consumer-group member's regex subscription (absent for
	// none); Subscription then holds the topics it matches too.
	Regex string `json:"regex,omitzero"`
	// KnownGeneration: classic groups only. The generation the member was
	// last told of (in a join, sync or refresh answer); below the group's
	// generation, the member still acts on an older assignment, until its
	// next request is fenced and it re-joins.
	KnownGeneration *int32 `json:"known_generation,omitzero"`
}

// topicPartitionsJSON is a topic and some of its partitions, sorted.
type topicPartitionsJSON struct {
	Topic      string  `json:"topic"`
	Partitions []int32 `json:"partitions"`
}

// ownerJSON is one partition and the member it is assigned to. In a
// consumer group Owner is the member that holds it now and Target the
// member the target assignment gives it (the same once every member has
// caught up; absent for classic groups).
type ownerJSON struct {
	Topic     string  `json:"topic"`
	Partition int32   `json:"partition"`
	Owner     string  `json:"owner"`
	Target    *string `json:"target,omitzero"`
}

// committedJSON is one committed offset (offsets.Entry).
type committedJSON struct {
	Topic       string `json:"topic"`
	Partition   int32  `json:"partition"`
	Offset      int64  `json:"offset"`
	Metadata    string `json:"metadata"`
	LeaderEpoch int32  `json:"leader_epoch"`
}

func (s *Server) handleGroups(w http.ResponseWriter, _ *http.Request) {
	snap := s.snapshot()
	now, nowMS := stamp(snap.now)
	out := groupsJSON{Now: now, NowMS: nowMS, Clock: s.clockKind(), Groups: []groupJSON{}}
	for _, l := range s.coord.Groups() {
		if v, ok := s.coord.Describe(l.Group); ok {
			out.Groups = append(out.Groups, s.group(v, snap))
		}
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) handleGroup(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("group")
	v, ok := s.coord.Describe(id)
	if !ok {
		writeError(w, http.StatusNotFound, fmt.Sprintf("group %q not found", id))
		return
	}
	snap := s.snapshot()
	now, nowMS := stamp(snap.now)
	writeJSON(w, http.StatusOK, groupAtJSON{Now: now, NowMS: nowMS, groupJSON: s.group(v, snap)})
}

// group renders one group.
func (s *Server) group(v coordinator.GroupView, snap *snapshot) groupJSON {
	g := groupJSON{
		Group:        v.Group,
		Type:         v.Type.String(),
		State:        v.State.String(),
		Generation:   v.Generation,
		Protocol:     v.Protocol,
		Leader:       v.Leader,
		Members:      []memberJSON{},
		Ownership:    []ownerJSON{},
		Committed:    []committedJSON{},
		LastActivity: s.recorder.lastActivity(v.Group),
		Generations:  s.recorder.generations(v.Group),
	}
	consumer := v.Type == coordinator.ConsumerGroup
	if consumer {
		g.GroupEpoch, g.AssignmentEpoch, g.Assignor = &v.Generation, &v.AssignmentEpoch, v.Assignor
	}
	owner, target := map[assignor.TopicPartition]string{}, map[assignor.TopicPartition]string{}
	var subscribed []string
	for _, m := range v.Members {
		deadline, deadlineMS := stamp(m.Deadline)
		mj := memberJSON{
			MemberID:         m.MemberID,
			InstanceID:       m.InstanceID,
			Regex:            m.Regex,
			ClientID:         m.ClientID,
			ClientHost:       m.ClientHost,
			SessionTimeoutMS: m.SessionTimeout.Milliseconds(),
			Deadline:         deadline,
			DeadlineMS:       deadlineMS,
			Subscription:     subscription(m),
			Assignment:       byTopic(m.Assignment),
		}
		if consumer {
			mj.MemberEpoch, mj.TargetAssignment = &m.MemberEpoch, byTopic(m.TargetAssignment)
		} else {
			mj.KnownGeneration = &m.KnownGeneration
		}
		g.Members = append(g.Members, mj)
		for _, tp := range m.Assignment {
			owner[tp] = m.MemberID
		}
		for _, tp := range m.TargetAssignment {
			target[tp] = m.MemberID
		}
		subscribed = append(subscribed, mj.Subscription...)
	}
	slices.Sort(subscribed)
	subscribed = slices.Compact(subscribed)
	for _, t := range subscribed {
		for p := range snap.topics[t] {
			tp := assignor.TopicPartition{Topic: t, Partition: p}
			o := ownerJSON{Topic: t, Partition: p, Owner: owner[tp]}
			if consumer {
				to := target[tp]
				o.Target = &to
			}
			g.Ownership = append(g.Ownership, o)
		}
	}
	committed := s.coord.Committed(v.Group)
	for _, e := range committed {
		g.Committed = append(g.Committed, committedJSON{
			Topic: e.Topic, Partition: e.Partition, Offset: e.Offset, Metadata: e.Metadata, LeaderEpoch: e.LeaderEpoch,
		})
	}
	g.Partitions = s.partitions(v, subscribed, committed, owner, target, snap)
	g.TotalLag = totalLag(g.Partitions)
	g.DoubleOwnership = doubleOwnership(v, g.Partitions)
	return g
}

// totalLag sums the lags of parts, or returns nil when none has one.
func totalLag(parts []partitionJSON) *int64 {
	var sum *int64
	for _, p := range parts {
		if p.Lag != nil {
			if sum == nil {
				sum = new(int64)
			}
			*sum += *p.Lag
		}
	}
	return sum
}

// subscription is a member's subscribed topics, sorted: the names it sent
// and those its regex matched.
func subscription(m coordinator.MemberView) []string {
	out := append(append([]string{}, m.Topics...), m.Matched...)
	slices.Sort(out)
	return slices.Compact(out)
}

// byTopic groups partitions, sorted by topic then partition as the
// coordinator keeps them, by topic.
func byTopic(parts []assignor.TopicPartition) []topicPartitionsJSON {
	out := []topicPartitionsJSON{}
	for _, tp := range parts {
		if n := len(out); n == 0 || out[n-1].Topic != tp.Topic {
			out = append(out, topicPartitionsJSON{Topic: tp.Topic, Partitions: []int32{}})
		}
		out[len(out)-1].Partitions = append(out[len(out)-1].Partitions, tp.Partition)
	}
	return out
}
