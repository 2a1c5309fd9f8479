package admin

// Double ownership: how many of a group's partitions two members both
// believe they own right now, from what the broker sees. The chapter's
// coordinator has no revoke barrier: a join moves partitions to the
// newcomer at once, while the old owner keeps consuming them on its old
// assignment until its next request is fenced and it re-joins. A consumer
// shows what it believes it owns by fetching it, so a partition that two
// members' connections have fetched within doubleOwnershipWindow is one
// both believe they own, unless one of them has since been told of the
// current generation and the partition is no longer its. A position is tied to a member as positions.go
// says; where it cannot be (members sharing a client id and host, as
// stock clients do by default), the count is by connection and the
// reason says so; where no member's connection has fetched lately, the
// count is unknown, with the reason.

import (
	"fmt"
	"slices"
	"time"

	"github.com/minibroker/minibroker/assignor"
	"github.com/minibroker/minibroker/coordinator"
)

// doubleOwnershipWindow is how recent a fetch must be to count as a
// belief held now. A consumer that owns a partition asks for it at least
// once per fetch wait (kgo's and Kafka's default is 500 ms to 5 s), so
// twice the longest default keeps an idle owner counted; a member that
// gave a partition up stops counting that much after its last fetch.
const doubleOwnershipWindow = 10 * time.Second

// doubleOwnershipJSON is the group's double ownership.
type doubleOwnershipJSON struct {
	// Partitions is how many partitions two or more members (or
	// connections) fetched within the window; null when it cannot tell.
	Partitions *int `json:"partitions"`
	// By is "member" when every recent position is tied to a member,
	// "connection" when some are not and the count is by connection.
	By string `json:"by"`
	// Reason says why the count is by connection or unknown ("" when
	// neither).
	Reason   string `json:"reason,omitempty"`
	WindowMS int64  `json:"window_ms"`
	// DoublyOwned lists the partitions counted, each with who fetched
	// it: member ids, or "connection ADDR (client id ID)".
	DoublyOwned []doublyOwnedJSON `json:"doubly_owned"`
}

// doublyOwnedJSON is one partition two or more fetch at once.
type doublyOwnedJSON struct {
	Topic     string   `json:"topic"`
	Partition int32    `json:"partition"`
	Fetchers  []string `json:"fetchers"`
}

// doubleOwnership counts, over a group's partitions (with their
// attributed fetch positions), those fetched by two or more members or
// connections within the window. A member that has been told of the
// group's current generation (member epoch) knows its assignment: its
// recent fetch of a partition outside it is a belief it has given up, and
// does not count.
func doubleOwnership(v coordinator.GroupView, parts []partitionJSON) doubleOwnershipJSON {
	out := doubleOwnershipJSON{By: "member", WindowMS: doubleOwnershipWindow.Milliseconds(), DoublyOwned: []doublyOwnedJSON{}}
	knows := map[string][]assignor.TopicPartition{} // caught-up member -> its assignment
	holding := false
	for _, m := range v.Members {
		holding = holding || len(m.Assignment) > 0
		if m.KnownGeneration == v.Generation {
			knows[m.MemberID] = m.Assignment
		}
	}
	recent, unattributed := 0, ""
	for _, p := range parts {
		tp := assignor.TopicPartition{Topic: p.Topic, Partition: p.Partition}
		var fetchers []string
		for _, f := range p.FetchPositions {
			if f.AgeMS > out.WindowMS {
				continue
			}
			recent++
			if held, ok := knows[f.MemberID]; ok && !slices.Contains(held, tp) {
				continue
			}
			who := f.MemberID
			if who == "" {
				who = fmt.Sprintf("connection %s (client id %s)", f.Remote, f.ClientID)
				unattributed = f.Unattributed
			}
			if !slices.Contains(fetchers, who) {
				fetchers = append(fetchers, who)
			}
		}
		if len(fetchers) > 1 {
			slices.Sort(fetchers)
			out.DoublyOwned = append(out.DoublyOwned, doublyOwnedJSON{Topic: p.Topic, Partition: p.Partition, Fetchers: fetchers})
		}
	}
	switch {
	case recent == 0 && holding:
		out.By = ""
		out.Reason = fmt.Sprintf("no connection with a member's client id fetched the group's partitions in the last %s", doubleOwnershipWindow)
		return out
	case unattributed != "":
		out.By = "connection"
		out.Reason = "counted by connection: " + unattributed
	}
	n := len(out.DoublyOwned)
	out.Partitions = &n
	return out
}
