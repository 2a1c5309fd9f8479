package integration

// The double-ownership count over real sockets: two kgo consumers that
// both fetch a partition, one of them not yet told that a join gave it to
// the other (docs/design.md section 10).

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/minibroker/minibroker/broker"
	"github.com/minibroker/minibroker/internal/testutil"
)

// adminOwnership is the double_ownership of GET /v1/groups/{group}.
type adminOwnership struct {
	Partitions  *int   `json:"partitions"`
	By          string `json:"by"`
	Reason      string `json:"reason"`
	DoublyOwned []struct {
		Topic     string   `json:"topic"`
		Partition int32    `json:"partition"`
		Fetchers  []string `json:"fetchers"`
	} `json:"doubly_owned"`
}

func adminDoubleOwnership(t *testing.T, b *testBroker, group string) adminOwnership {
	t.Helper()
	code, body := adminHTTP(t, "GET", b.adminURL()+"/v1/groups/"+group, "")
	require.Equal(t, http.StatusOK, code, body)
	var g struct {
		DoubleOwnership adminOwnership `json:"double_ownership"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &g), body)
	return g.DoubleOwnership
}

// ownershipConsumer is a kgo group consumer of topic with clientID in
// group, which gives up on an unanswered request after a second.
func ownershipConsumer(t *testing.T, b *testBroker, clientID, group, topic string) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(b.Addr()), kgo.ClientID(clientID),
		kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.DisableAutoCommit(), kgo.Balancers(kgo.RoundRobinBalancer()),
		kgo.HeartbeatInterval(kgoHeartbeat), kgo.FetchMaxWait(kgoFetchMaxWait),
		kgo.RequestTimeoutOverhead(time.Second),
		kgo.RetryBackoffFn(func(int) time.Duration { return kgoRetryBackoff }),
	)
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	return cl
}

// TestAdminDoubleOwnershipOverTheWire: A consumes both partitions of a
// topic; its heartbeats are dropped (a fault), so when B joins and the
// coordinator gives B partition 1 at once, A is never told and keeps
// fetching both. The group shows partition 1 owned twice, by A's and B's
// member ids. Once A has left, nothing is.
func TestAdminDoubleOwnershipOverTheWire(t *testing.T) {
	t.Parallel()
	b := startBroker(t, adminConfig)
	require.NoError(t, b.CreateTopic("owned", 2, nil))
	const group = "owners"
	a := ownershipConsumer(t, b, "owner-a", group, "owned")
	var aID string
	testutil.Eventually(t, kgoWait, func() string {
		g, ok := adminPositions(t, b, group)
		if !ok || len(g.Members) != 1 || len(g.Partitions) != 2 {
			return fmt.Sprintf("A has not joined yet: %+v", g)
		}
		aID = g.Members[0].MemberID
		for _, p := range g.Partitions {
			if len(p.FetchPositions) != 1 || p.FetchPositions[0].MemberID != aID {
				return fmt.Sprintf("A does not fetch %s-%d yet: %+v", p.Topic, p.Partition, p.FetchPositions)
			}
		}
		return ""
	})
	require.Equal(t, 0, *adminDoubleOwnership(t, b, group).Partitions)

	fault, err := b.InjectFault(broker.Fault{Keys: []int16{12}, Group: group, Member: aID, Drop: true, Count: -1})
	require.NoError(t, err)
	testutil.Eventually(t, kgoWait, func() string {
		if fault.Hits() == 0 {
			return "no heartbeat of A dropped yet"
		}
		return ""
	})
	ownershipConsumer(t, b, "owner-b", group, "owned")
	var got adminOwnership
	testutil.Eventually(t, kgoWait, func() string {
		got = adminDoubleOwnership(t, b, group)
		if got.Partitions == nil || *got.Partitions != 1 {
			return fmt.Sprintf("not one partition owned twice yet: %+v", got)
		}
		return ""
	})
	require.Equal(t, "member", got.By)
	require.Empty(t, got.Reason)
	require.Len(t, got.DoublyOwned, 1)
	require.Equal(t, "owned", got.DoublyOwned[0].Topic)
	require.Equal(t, int32(1), got.DoublyOwned[0].Partition, "round robin gives B, the second member, partition 1")
	bID := slices.DeleteFunc(slices.Clone(got.DoublyOwned[0].Fetchers), func(id string) bool { return id == aID })
	require.Len(t, bID, 1, "A and one other member: %v", got.DoublyOwned[0].Fetchers)
	v := b.describe(group)
	require.Len(t, v.Members, 2)
	require.ElementsMatch(t, []string{aID, bID[0]}, []string{v.Members[0].MemberID, v.Members[1].MemberID})

	// A leaves (LeaveGroup is not dropped) and its connections close.
	fault.Remove()
	a.Close()
	testutil.Eventually(t, kgoWait, func() string {
		if got = adminDoubleOwnership(t, b, group); got.Partitions == nil || *got.Partitions != 0 {
			return fmt.Sprintf("still owned twice: %+v", got)
		}
		return ""
	})
}
