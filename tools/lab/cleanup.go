package lab

// The clean-up after a run on a broker the tool did not start: the run's
// groups go (with their committed offsets), then the topics only that run
// used, and the report says exactly what went and what stays, and why.
// A run that ends early (interrupted, failed) may leave members in its
// groups, and a group with members cannot be deleted (NON_EMPTY_GROUP, as
// Kafka's DeleteGroups answers), so those members leave first, each the
// way it would leave itself on its way out.

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/wireclient"
)

// Cleaned is what Cleanup did beside deleting.
type Cleaned struct {
	// Left are the members the run had left in its groups, which
	// Cleanup made leave, as "group member".
	Left []string
	// Kept are the groups it could not delete, each with the code or the
	// reason.
	Kept []string
	// Aborted are the run's transactional ids whose open transaction
	// Cleanup aborted.
	Aborted []string
}

// Cleanup deletes, on a shared broker at addr, every group of the run
// (ListGroups, then DeleteGroups, which takes their committed offsets
// with them), first making any member the run left in one leave
// (LeaveGroup for a classic group, by member id and instance id as
// Kafka's Admin.removeMembersFromConsumerGroup sends it; for a consumer
// group, whose members Kafka's LeaveGroup refuses, the member's own
// leave, a ConsumerGroupHeartbeat at epoch -1) and aborting any
// transaction of the run still open (InitProducerId for its
// transactional id, which aborts it as a restarted producer's does;
// the ids themselves stay, as the broker keeps every transactional id);
// then the topics only this
// run used (DeleteTopics: names that carry the run's id). It writes to w
// what it removed and what stays: the topics every run of the tool
// shares, any group it could not delete, and the run's topics that stay
// with such a group. It does nothing on the tool's own broker.
func (n Scope) Cleanup(ctx context.Context, w io.Writer, addr string, topics []string) (Cleaned, error) {
	var done Cleaned
	if !n.Shared() {
		return done, nil
	}
	conn, err := wireclient.Dial(ctx, addr, n.tool)
	if err != nil {
		return done, err
	}
	defer conn.Close()
	list := kmsg.NewPtrListGroupsRequest()
	list.Version = 5
	listed, err := Request[*kmsg.ListGroupsResponse](ctx, conn, list)
	if err != nil {
		return done, err
	}
	if listed.ErrorCode != 0 {
		return done, fmt.Errorf("%s: ListGroups answered %s", n.tool, CodeName(listed.ErrorCode))
	}
	slices.SortFunc(listed.Groups, func(a, b kmsg.ListGroupsResponseGroup) int { return strings.Compare(a.Group, b.Group) })
	var mine []string
	for _, g := range listed.Groups {
		if !n.owns(g.Group) {
			continue
		}
		mine = append(mine, g.Group)
		if g.GroupState == "Empty" {
			continue
		}
		left, err := n.leaveAll(ctx, w, conn, g.Group, g.GroupType)
		done.Left = append(done.Left, left...)
		if err != nil {
			return done, err
		}
	}
	aborted, err := n.abortOpen(ctx, w, conn)
	done.Aborted = aborted
	if err != nil {
		return done, err
	}
	deleted := 0
	if len(mine) > 0 {
		del := kmsg.NewPtrDeleteGroupsRequest()
		del.Version, del.Groups = 2, mine
		resp, err := Request[*kmsg.DeleteGroupsResponse](ctx, conn, del)
		if err != nil {
			return done, err
		}
		for _, g := range resp.Groups {
			switch g.ErrorCode {
			case 0:
				deleted++
			case kerr.GroupIDNotFound.Code: // gone meanwhile
			default:
				done.Kept = append(done.Kept, g.Group+" ("+CodeName(g.ErrorCode)+")")
			}
		}
	}
	groups := "groups"
	if deleted == 1 {
		groups = "group"
	}
	fmt.Fprintf(w, "%s: deleted %d %s of run %s, with their committed offsets", n.tool, deleted, groups, n.run)
	if len(done.Kept) > 0 {
		fmt.Fprintf(w, "; could not delete %s", strings.Join(done.Kept, ", "))
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
	switch {
	case len(own) > 0 && len(done.Kept) == 0:
		refused, err := n.deleteTopics(ctx, conn, own)
		if err != nil {
			return done, err
		}
		if gone := slices.DeleteFunc(slices.Clone(own), func(t string) bool {
			return slices.ContainsFunc(refused, func(r string) bool { return strings.HasPrefix(r, t+" (") })
		}); len(gone) > 0 {
			fmt.Fprintf(w, "%s: deleted topics %s of run %s.\n", n.tool, strings.Join(gone, ", "), n.run)
		}
		if len(refused) > 0 {
			fmt.Fprintf(w, "%s: could not delete topics %s of run %s; DeleteTopics (kadm, or the delete button on the live page) removes them.\n",
				n.tool, strings.Join(refused, ", "), n.run)
			return done, fmt.Errorf("%s: DeleteTopics refused %s", n.tool, strings.Join(refused, ", "))
		}
	case len(own) > 0:
		fmt.Fprintf(w, "%s: topics %s of run %s stay, with the groups that could not be deleted; DeleteGroups, then DeleteTopics (kadm, or the delete buttons on the live page) remove them.\n",
			n.tool, strings.Join(own, ", "), n.run)
	}
	if len(shared) > 0 {
		fmt.Fprintf(w, "%s: topics %s stay on the broker (every run of %s shares them); DeleteTopics (kadm, or the delete button on the live page) or a new data dir removes them.\n",
			n.tool, strings.Join(shared, ", "), n.tool)
	}
	return done, nil
}

// leaveAll makes every member of group leave, and returns those that did
// as "group member". typ is the group's type as ListGroups v5 names it.
func (n Scope) leaveAll(ctx context.Context, w io.Writer, conn *wireclient.Client, group, typ string) ([]string, error) {
	type member struct{ id, instance string }
	var members []member
	how := "LeaveGroup"
	if typ == "consumer" {
		how = "ConsumerGroupHeartbeat at epoch -1"
		describe := kmsg.NewPtrConsumerGroupDescribeRequest()
		describe.Groups = []string{group}
		resp, err := Request[*kmsg.ConsumerGroupDescribeResponse](ctx, conn, describe)
		if err != nil {
			return nil, err
		}
		for _, g := range resp.Groups {
			for _, m := range g.Members {
				members = append(members, member{m.MemberID, deref(m.InstanceID)})
			}
		}
	} else {
		describe := kmsg.NewPtrDescribeGroupsRequest()
		describe.Version, describe.Groups = DescribeGroupsVersion, []string{group}
		resp, err := Request[*kmsg.DescribeGroupsResponse](ctx, conn, describe)
		if err != nil {
			return nil, err
		}
		for _, g := range resp.Groups {
			for _, m := range g.Members {
				members = append(members, member{m.MemberID, deref(m.InstanceID)})
			}
		}
	}
	if len(members) == 0 {
		return nil, nil
	}
	var left, refused []string
	if typ == "consumer" {
		for _, m := range members {
			hb := kmsg.NewPtrConsumerGroupHeartbeatRequest()
			hb.Group, hb.MemberID, hb.MemberEpoch, hb.RebalanceTimeoutMillis = group, m.id, -1, -1
			if m.instance != "" {
				hb.InstanceID = kmsg.StringPtr(m.instance)
			}
			resp, err := Request[*kmsg.ConsumerGroupHeartbeatResponse](ctx, conn, hb)
			if err != nil {
				return left, err
			}
			if resp.ErrorCode == 0 || resp.ErrorCode == kerr.UnknownMemberID.Code {
				left = append(left, m.id)
			} else {
				refused = append(refused, m.id+" ("+CodeName(resp.ErrorCode)+")")
			}
		}
	} else {
		leave := kmsg.NewPtrLeaveGroupRequest()
		leave.Version, leave.Group = LeaveGroupVersion, group
		for _, m := range members {
			lm := kmsg.NewLeaveGroupRequestMember()
			lm.MemberID, lm.Reason = m.id, kmsg.StringPtr("the "+n.tool+" run that made it ended early")
			if m.instance != "" {
				lm.InstanceID = kmsg.StringPtr(m.instance)
			}
			leave.Members = append(leave.Members, lm)
		}
		resp, err := Request[*kmsg.LeaveGroupResponse](ctx, conn, leave)
		if err != nil {
			return nil, err
		}
		if resp.ErrorCode != 0 { // the whole request refused
			for _, m := range members {
				refused = append(refused, m.id+" ("+CodeName(resp.ErrorCode)+")")
			}
		}
		for _, m := range resp.Members {
			code := m.ErrorCode
			if code == 0 {
				code = resp.ErrorCode
			}
			if code == 0 || code == kerr.UnknownMemberID.Code {
				left = append(left, m.MemberID)
			} else {
				refused = append(refused, m.MemberID+" ("+CodeName(code)+")")
			}
		}
	}
	if len(left) > 0 {
		fmt.Fprintf(w, "%s: group %s still had members of run %s: %s; they left (%s, as each would on its way out).\n",
			n.tool, group, n.run, strings.Join(left, ", "), how)
	}
	if len(refused) > 0 {
		fmt.Fprintf(w, "%s: group %s: members %s could not leave; they go when their sessions end.\n", n.tool, group, strings.Join(refused, ", "))
	}
	out := make([]string, len(left))
	for i, id := range left {
		out[i] = group + " " + id
	}
	return out, nil
}

// abortOpen aborts the run's open transactions (ListTransactions, then
// InitProducerId for each: the broker aborts the open transaction and
// bumps the epoch, as for a producer that restarts), and returns their
// ids. A transaction whose markers are being written (CONCURRENT_TRANSACTIONS)
// is asked again until ctx ends.
func (n Scope) abortOpen(ctx context.Context, w io.Writer, conn *wireclient.Client) ([]string, error) {
	list := kmsg.NewPtrListTransactionsRequest()
	list.StateFilters = []string{"Ongoing", "PrepareCommit", "PrepareAbort"}
	listed, err := Request[*kmsg.ListTransactionsResponse](ctx, conn, list)
	if err != nil {
		return nil, err
	}
	if listed.ErrorCode != 0 {
		return nil, fmt.Errorf("%s: ListTransactions answered %s", n.tool, CodeName(listed.ErrorCode))
	}
	var aborted, refused []string
	for _, t := range listed.TransactionStates {
		if !n.owns(t.TransactionalID) {
			continue
		}
		init := kmsg.NewPtrInitProducerIDRequest()
		init.Version, init.TransactionalID, init.TransactionTimeoutMillis = 4, kmsg.StringPtr(t.TransactionalID), 60_000
		for {
			resp, err := Request[*kmsg.InitProducerIDResponse](ctx, conn, init)
			if err != nil {
				return aborted, err
			}
			if resp.ErrorCode == kerr.ConcurrentTransactions.Code {
				select {
				case <-ctx.Done():
					return aborted, ctx.Err()
				case <-time.After(10 * time.Millisecond):
				}
				continue
			}
			if resp.ErrorCode == 0 {
				aborted = append(aborted, t.TransactionalID)
			} else {
				refused = append(refused, t.TransactionalID+" ("+CodeName(resp.ErrorCode)+")")
			}
			break
		}
	}
	if len(aborted) > 0 {
		fmt.Fprintf(w, "%s: aborted the open transactions of run %s: %s (InitProducerId, as a restarted producer does).\n", n.tool, n.run, strings.Join(aborted, ", "))
	}
	if len(refused) > 0 {
		fmt.Fprintf(w, "%s: could not abort the transactions %s; the broker aborts each at its timeout.\n", n.tool, strings.Join(refused, ", "))
	}
	return aborted, nil
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
		left = append(left, deref(t.Topic)+" ("+CodeName(t.ErrorCode)+")")
	}
	return left, nil
}

// deref is *s, "" for nil.
func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
