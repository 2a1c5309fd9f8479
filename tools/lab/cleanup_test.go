package lab

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/minibroker/minibroker/broker"
	"github.com/minibroker/minibroker/testkit/wiretest"
)

// TestScopeCleanup deletes the run's groups and their offsets, the ones a
// run left members in too, after those members leave as each would (a
// classic member by LeaveGroup, a consumer-protocol member by its
// heartbeat at epoch -1), says which, and leaves other groups alone.
func TestScopeCleanup(t *testing.T) {
	t.Parallel()
	b, err := broker.Start(testContext(t), broker.Config{Topics: map[string]int32{"orders": 4}})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, b.Close()) })
	run := OnBroker("lab")
	c := wiretest.Dial(t, b.Addr(), "user-app")
	userCommit(t, c, run.Group("a"), "orders", 0, 3)
	userCommit(t, c, run.Group("a")+"-fenced", "orders", 0, 3)
	userCommit(t, c, "billing", "orders", 0, 5)
	m, err := Dial(testContext(t), b.Addr(), MemberConfig{Group: run.Group("busy"), Topics: []string{"orders"}})
	require.NoError(t, err)
	t.Cleanup(func() { m.Close() })
	code, err := m.Join(testContext(t))
	require.NoError(t, err)
	require.Zero(t, code)
	cm, err := DialConsumer(testContext(t), b.Addr(), ConsumerConfig{Group: run.Group("busy-848"), MemberID: "consumer-a", Topics: []string{"orders"}})
	require.NoError(t, err)
	t.Cleanup(func() { cm.Close() })
	code, err = cm.Join(testContext(t))
	require.NoError(t, err)
	require.Zero(t, code)

	var out bytes.Buffer
	cleaned, err := run.Cleanup(testContext(t), &out, b.Addr(), []string{run.Topic("orders")})
	require.NoError(t, err)
	// In the order of their names.
	require.Equal(t, Cleaned{Left: []string{run.Group("busy-848") + " consumer-a", run.Group("busy") + " " + m.ID}}, cleaned)
	require.Equal(t, "lab: group "+run.Group("busy-848")+" still had members of run "+run.Run()+": consumer-a; they left (ConsumerGroupHeartbeat at epoch -1, as each would on its way out).\n"+
		"lab: group "+run.Group("busy")+" still had members of run "+run.Run()+": "+m.ID+"; they left (LeaveGroup, as each would on its way out).\n"+
		"lab: deleted 4 groups of run "+run.Run()+", with their committed offsets.\n"+
		"lab: topics "+run.Topic("orders")+" stay on the broker (every run of lab shares them); DeleteTopics (kadm, or the delete button on the live page) or a new data dir removes them.\n", out.String())
	require.Empty(t, b.Committed(run.Group("a")))
	require.Len(t, b.Committed("billing"), 1)
	groups := b.Coordinator().Groups()
	require.Len(t, groups, 1)
	require.Equal(t, "billing", groups[0].Group)

	out.Reset()
	cleaned, err = InProcess("lab").Cleanup(testContext(t), &out, b.Addr(), nil)
	require.NoError(t, err)
	require.Empty(t, cleaned)
	require.Empty(t, out.String())
}

// TestScopeCleanupSaysWhatStays: a member that cannot leave (here a
// fault answers the clean-up's LeaveGroup) keeps its group, and the
// run's own topic stays with it; the report says so, naming them, and
// does not call the run's topic shared.
func TestScopeCleanupSaysWhatStays(t *testing.T) {
	t.Parallel()
	b, err := broker.Start(testContext(t), broker.Config{Topics: map[string]int32{"orders": 1}})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, b.Close()) })
	run := OnBroker("lab")
	mine := run.RunTopic("payments")
	require.NoError(t, EnsureTopics(testContext(t), b.Addr(), map[string]int32{mine: 1}))
	m, err := Dial(testContext(t), b.Addr(), MemberConfig{Group: run.Group("stuck"), Topics: []string{mine}})
	require.NoError(t, err)
	t.Cleanup(func() { m.Close() })
	code, err := m.Join(testContext(t))
	require.NoError(t, err)
	require.Zero(t, code)
	_, err = b.InjectFault(broker.Fault{Keys: []int16{13}, Group: run.Group("stuck"), Err: kerr.CoordinatorNotAvailable.Code, Count: -1})
	require.NoError(t, err)

	var out bytes.Buffer
	cleaned, err := run.Cleanup(testContext(t), &out, b.Addr(), []string{mine})
	require.NoError(t, err)
	require.Equal(t, Cleaned{Kept: []string{run.Group("stuck") + " (NON_EMPTY_GROUP)"}}, cleaned)
	require.Equal(t, "lab: group "+run.Group("stuck")+": members "+m.ID+" (COORDINATOR_NOT_AVAILABLE) could not leave; they go when their sessions end.\n"+
		"lab: deleted 0 groups of run "+run.Run()+", with their committed offsets; could not delete "+run.Group("stuck")+" (NON_EMPTY_GROUP).\n"+
		"lab: topics "+mine+" of run "+run.Run()+" stay, with the groups that could not be deleted; DeleteGroups, then DeleteTopics (kadm, or the delete buttons on the live page) remove them.\n", out.String())
	require.Contains(t, b.Catalog().Counts(), mine)
}

// TestScopeCleanupDeletesTheRunsTopics: once the run's groups are gone,
// the topics only this run used (their names carry the run's id) are
// deleted; a topic every run shares, and a user's, stay.
func TestScopeCleanupDeletesTheRunsTopics(t *testing.T) {
	t.Parallel()
	b, err := broker.Start(testContext(t), broker.Config{Topics: map[string]int32{"orders": 1}})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, b.Close()) })
	run := OnBroker("lab")
	mine, shared := run.RunTopic("payments"), run.Topic("orders")
	require.NoError(t, EnsureTopics(testContext(t), b.Addr(), map[string]int32{mine: 1, shared: 2}))
	c := wiretest.Dial(t, b.Addr(), "user-app")
	userCommit(t, c, run.Group("a"), mine, 0, 3)

	var out bytes.Buffer
	cleaned, err := run.Cleanup(testContext(t), &out, b.Addr(), []string{shared, mine})
	require.NoError(t, err)
	require.Empty(t, cleaned)
	require.Equal(t, "lab: deleted 1 group of run "+run.Run()+", with their committed offsets.\n"+
		"lab: deleted topics "+mine+" of run "+run.Run()+".\n"+
		"lab: topics "+shared+" stay on the broker (every run of lab shares them); DeleteTopics (kadm, or the delete button on the live page) or a new data dir removes them.\n", out.String())
	require.Equal(t, map[string]int32{"orders": 1, shared: 2}, b.Catalog().Counts())
}

// TestScopeCleanupAbortsTheRunsOpenTransactions: a transaction of the
// run left open (a producer stopped between Produce and EndTxn) is
// aborted by InitProducerId for its transactional id before the run's
// topic goes; another's open transaction is left alone.
func TestScopeCleanupAbortsTheRunsOpenTransactions(t *testing.T) {
	t.Parallel()
	b, err := broker.Start(testContext(t), broker.Config{Topics: map[string]int32{"orders": 1}})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, b.Close()) })
	run := OnBroker("lab")
	mine := run.RunTopic("out")
	require.NoError(t, EnsureTopics(testContext(t), b.Addr(), map[string]int32{mine: 1}))
	open := func(id, topic string) {
		cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.TransactionalID(id), kgo.DefaultProduceTopic(topic))
		require.NoError(t, err)
		t.Cleanup(cl.Close)
		require.NoError(t, cl.BeginTransaction())
		require.NoError(t, cl.ProduceSync(testContext(t), &kgo.Record{Value: []byte("v")}).FirstErr())
	}
	open(run.Group("txn")+"-a", mine)
	open("billing-writer", "orders")
	state := func(id string) (string, int16) {
		t.Helper()
		d := b.Transactions().Describe([]string{id})[0]
		return d.State.String(), d.Epoch
	}
	st, epoch := state(run.Group("txn") + "-a")
	require.Equal(t, "Ongoing", st)

	var out bytes.Buffer
	cleaned, err := run.Cleanup(testContext(t), &out, b.Addr(), []string{mine})
	require.NoError(t, err)
	require.Equal(t, []string{run.Group("txn") + "-a"}, cleaned.Aborted)
	require.Equal(t, "lab: aborted the open transactions of run "+run.Run()+": "+run.Group("txn")+"-a (InitProducerId, as a restarted producer does).\n"+
		"lab: deleted 0 groups of run "+run.Run()+", with their committed offsets.\n"+
		"lab: deleted topics "+mine+" of run "+run.Run()+".\n", out.String())
	st, after := state(run.Group("txn") + "-a")
	require.Equal(t, "Empty", st, "aborted, then initialized again")
	require.Greater(t, after, epoch, "the producer that left it open is fenced")
	st, _ = state("billing-writer")
	require.Equal(t, "Ongoing", st, "not the run's")
}
