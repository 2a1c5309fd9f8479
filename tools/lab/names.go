package lab

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/wireclient"
)

// Scope is what one run of a tool (a lab, the comparison) calls the
// groups and topics it makes. Every tool that runs against a broker it
// did not start (--broker) takes its names from here, so that it never
// touches a group or topic a user made, two runs never meet, and what a
// run leaves behind says which tool left it.
//
// On the tool's own broker (InProcess) the names are the chapter's:
// group "lab-fencing", topic "orders". On a user's broker (OnBroker) each
// says which tool made it, and groups carry the run's id: group
// "lab-fencing-mk2x9q0b1c", topic "lab-orders" (or, for a run that needs
// it empty, "lab-mk2x9q0b1c-orders").
type Scope struct {
	tool string
	run  string // "" on the tool's own broker
}

// InProcess returns the names of a run on a broker the tool started
// itself, which holds nothing else.
func InProcess(tool string) Scope { return Scope{tool: tool} }

// OnBroker returns the names of a run on a broker someone else runs:
// they end with an id no other run of this process has, and that a run
// of another process has only if it started in the same nanosecond.
func OnBroker(tool string) Scope { return Scope{tool: tool, run: newRunID()} }

var (
	runMu   sync.Mutex
	lastRun int64 // guarded by runMu
)

// newRunID returns the time in nanoseconds in base 36, later than any id
// returned before in this process.
func newRunID() string {
	runMu.Lock()
	defer runMu.Unlock()
	now := max(time.Now().UnixNano(), lastRun+1)
	lastRun = now
	return strconv.FormatInt(now, 36)
}

// Shared reports whether the names are for a broker the tool did not
// start.
func (n Scope) Shared() bool { return n.run != "" }

// Run is the run's id, "" on the tool's own broker.
func (n Scope) Run() string { return n.run }

// Group is the group the run calls name: "lab-fencing", or
// "lab-fencing-<run>" on a shared broker.
func (n Scope) Group(name string) string {
	if n.run == "" {
		return n.tool + "-" + name
	}
	return n.tool + "-" + name + "-" + n.run
}

// Topic is the topic the run uses for the chapter's topic name: name
// itself on the tool's own broker, "<tool>-<name>" on a shared one, the
// same for every run of the tool (a run that needs the topic empty takes
// RunTopic).
func (n Scope) Topic(name string) string {
	if n.run == "" {
		return name
	}
	return n.tool + "-" + name
}

// RunTopic is Topic for a run that needs a topic no other run has used
// (empty when it starts): "<tool>-<run>-<name>" on a shared broker.
func (n Scope) RunTopic(name string) string {
	if n.run == "" {
		return name
	}
	return n.tool + "-" + n.run + "-" + name
}

// Topics renames a catalog of the chapter's topics with Topic.
func (n Scope) Topics(catalog map[string]int32) map[string]int32 {
	return n.rename(catalog, n.Topic)
}

// RunTopics renames a catalog of the chapter's topics with RunTopic.
func (n Scope) RunTopics(catalog map[string]int32) map[string]int32 {
	return n.rename(catalog, n.RunTopic)
}

func (n Scope) rename(catalog map[string]int32, name func(string) string) map[string]int32 {
	out := make(map[string]int32, len(catalog))
	for t, parts := range catalog {
		out[name(t)] = parts
	}
	return out
}

// Chapter rewrites the run's names for the chapter's topics in s (Topic
// and RunTopic) back to the chapter's own ("lab-orders-1" reads
// "orders-1"), so that an answer reads the same on every broker.
func (n Scope) Chapter(s string, topics ...string) string {
	if n.run == "" {
		return s
	}
	for _, t := range topics {
		s = strings.ReplaceAll(s, n.RunTopic(t), t)
		s = strings.ReplaceAll(s, n.Topic(t), t)
	}
	return s
}

// owns reports whether group is one of the run's: the tool's prefix and
// the run's id, as Group makes them, and anything a tool derives from
// them by a suffix ("...-<run>-nobody").
func (n Scope) owns(group string) bool {
	return n.run != "" && strings.HasPrefix(group, n.tool+"-") &&
		(strings.HasSuffix(group, "-"+n.run) || strings.Contains(group, "-"+n.run+"-"))
}

// Cleanup deletes, on a shared broker at addr, every group of the run
// (ListGroups, then DeleteGroups, which takes their committed offsets
// with them), then the topics only this run used (DeleteTopics: names
// that carry the run's id), and writes to w what it deleted and what
// stays: the topics every run of the tool shares, and any group it could
// not delete (one that still has members; then the run's topics stay
// too). It does nothing on the tool's own broker. It returns the groups
// it could not delete.
func (n Scope) Cleanup(ctx context.Context, w io.Writer, addr string, topics []string) ([]string, error) {
	if !n.Shared() {
		return nil, nil
	}
	conn, err := wireclient.Dial(ctx, addr, n.tool)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	list := kmsg.NewPtrListGroupsRequest()
	list.Version = 4
	listed, err := Request[*kmsg.ListGroupsResponse](ctx, conn, list)
	if err != nil {
		return nil, err
	}
	if listed.ErrorCode != 0 {
		return nil, fmt.Errorf("%s: ListGroups answered %s", n.tool, CodeName(listed.ErrorCode))
	}
	var mine []string
	for _, g := range listed.Groups {
		if n.owns(g.Group) {
			mine = append(mine, g.Group)
		}
	}
	slices.Sort(mine)
	var kept []string
	deleted := 0
	if len(mine) > 0 {
		del := kmsg.NewPtrDeleteGroupsRequest()
		del.Version, del.Groups = 2, mine
		resp, err := Request[*kmsg.DeleteGroupsResponse](ctx, conn, del)
		if err != nil {
			return nil, err
		}
		for _, g := range resp.Groups {
			switch g.ErrorCode {
			case 0:
				deleted++
			case kerr.GroupIDNotFound.Code: // gone meanwhile
			default:
				kept = append(kept, g.Group+" ("+CodeName(g.ErrorCode)+")")
			}
		}
	}
	groups := "groups"
	if deleted == 1 {
		groups = "group"
	}
	fmt.Fprintf(w, "%s: deleted %d %s of run %s, with their committed offsets", n.tool, deleted, groups, n.run)
	if len(kept) > 0 {
		fmt.Fprintf(w, "; kept %s", strings.Join(kept, ", "))
	}
	fmt.Fprintln(w, ".")
	var own, shared []string
	for _, t := range slices.Sorted(slices.Values(topics)) {
		if strings.Contains(t, "-"+n.run) {
			own = append(own, t)
		} else {
			shared = append(shared, t)
		}
	}
	if len(own) > 0 && len(kept) == 0 {
		left, err := n.deleteTopics(ctx, conn, own)
		if err != nil {
			return kept, err
		}
		fmt.Fprintf(w, "%s: deleted topics %s of run %s.\n", n.tool, strings.Join(own, ", "), n.run)
		if len(left) > 0 {
			return kept, fmt.Errorf("%s: DeleteTopics refused %s", n.tool, strings.Join(left, ", "))
		}
	} else {
		shared = append(shared, own...) // a group of the run still holds members
	}
	if len(shared) > 0 {
		fmt.Fprintf(w, "%s: topics %s stay on the broker (every run of %s shares them); DeleteTopics (kadm, or the delete button on the live page) or a new data dir removes them.\n",
			n.tool, strings.Join(slices.Sorted(slices.Values(shared)), ", "), n.tool)
	}
	return kept, nil
}

// deleteTopics deletes topics on conn (DeleteTopics v4, by name) and
// returns those the broker refused, with the code it answered.
func (n Scope) deleteTopics(ctx context.Context, conn *wireclient.Client, topics []string) ([]string, error) {
	del := kmsg.NewPtrDeleteTopicsRequest()
	del.Version, del.TopicNames, del.TimeoutMillis = 4, topics, 30_000
	resp, err := Request[*kmsg.DeleteTopicsResponse](ctx, conn, del)
	if err != nil {
		return nil, err
	}
	var left []string
	for _, t := range resp.Topics {
		if t.ErrorCode == 0 || t.ErrorCode == kerr.UnknownTopicOrPartition.Code { // gone meanwhile is gone
			continue
		}
		name := ""
		if t.Topic != nil {
			name = *t.Topic
		}
		left = append(left, name+" ("+CodeName(t.ErrorCode)+")")
	}
	return left, nil
}

// topicNames returns the names of a catalog, sorted.
func topicNames(catalog map[string]int32) []string { return slices.Sorted(maps.Keys(catalog)) }
