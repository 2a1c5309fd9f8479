package broker

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/testkit/wiretest"
)

// TestInjectFaultNoneSurvivesARestart: a fault applies to the requests
// it matches on the broker's wire and is listed with its hit; a bad one
// is refused; a broker started again on the same data dir has none.
func TestInjectFaultNoneSurvivesARestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	b, err := Start(t.Context(), Config{DataDir: dir, Topics: map[string]int32{"orders": 1}, ManualClock: true})
	require.NoError(t, err)
	_, err = b.InjectFault(Fault{Keys: []int16{12}, Drop: true, Close: true})
	require.ErrorContains(t, err, "exactly one action")
	f, err := b.InjectFault(Fault{Keys: []int16{8}, Group: "g", Err: kerr.NotCoordinator.Code})
	require.NoError(t, err)

	c := wiretest.Dial(t, b.Addr(), "test")
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Version, req.Group, req.Generation = 8, "g", -1
	req.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "orders", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 4}}}}
	ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
	defer cancel()
	resp, err := c.Request(ctx, req)
	require.NoError(t, err)
	require.Equal(t, kerr.NotCoordinator.Code, resp.(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode)
	require.NoError(t, f.Wait(ctx))
	list := b.Faults()
	require.Len(t, list, 1)
	require.Equal(t, int64(1), list[0].Hits)
	require.Zero(t, list[0].Remaining)
	_, ok := b.Coordinator().CommittedOffset("g", "orders", 0)
	require.False(t, ok, "the faulted commit was not applied")
	require.NoError(t, b.Close())

	again := start(t, Config{DataDir: dir, ManualClock: true})
	require.Empty(t, again.Faults(), "faults live in memory only")
}

// TestInjectFaultWarnsOfWhatDoesNotExist: through the broker's own
// coordinator and catalog, a fault naming a member that has not joined
// and a topic it lacks is put in force with warnings that say so; once
// the member joins (member ids are the client id and a sequence) and the
// topic exists, it has none, and it applies to the member's heartbeat.
func TestInjectFaultWarnsOfWhatDoesNotExist(t *testing.T) {
	t.Parallel()
	b := start(t, Config{Topics: map[string]int32{"orders": 1}, ManualClock: true})
	f, err := b.InjectFault(Fault{Keys: []int16{12}, Group: "billing", Member: "billing-app-000001", Err: kerr.RebalanceInProgress.Code, Count: -1})
	require.NoError(t, err, "a fault may come before its target")
	require.Equal(t, []string{`no group "billing" now, so no member "billing-app-000001" in it`}, f.Warnings())
	typo, err := b.InjectFault(Fault{Keys: []int16{1}, Topic: "order", Err: kerr.NotLeaderForPartition.Code})
	require.NoError(t, err)
	require.Equal(t, []string{`no topic "order" now`}, typo.Warnings())
	require.Equal(t, []string{`no topic "order" now`}, b.Faults()[1].Warnings)

	c := wiretest.Dial(t, b.Addr(), "billing-app")
	ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
	defer cancel()
	join := kmsg.NewPtrJoinGroupRequest()
	join.Version, join.Group, join.ProtocolType, join.SessionTimeoutMillis = 3, "billing", "consumer", 30_000
	join.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: (&kmsg.ConsumerMemberMetadata{Topics: []string{"orders"}}).AppendTo(nil)}}
	resp, err := c.Request(ctx, join)
	require.NoError(t, err)
	joined := resp.(*kmsg.JoinGroupResponse)
	require.Zero(t, joined.ErrorCode)
	require.Equal(t, "billing-app-000001", joined.MemberID)
	require.Nil(t, f.Warnings(), "the member it names has joined")
	require.NoError(t, b.CreateTopic("order", 1, nil))
	require.Nil(t, typo.Warnings())

	hb := kmsg.NewPtrHeartbeatRequest()
	hb.Version, hb.Group, hb.MemberID, hb.Generation = 3, "billing", joined.MemberID, joined.Generation
	got, err := c.Request(ctx, hb)
	require.NoError(t, err)
	require.Equal(t, kerr.RebalanceInProgress.Code, got.(*kmsg.HeartbeatResponse).ErrorCode)
	require.Equal(t, int64(1), f.Hits())
}

// TestControlWithKgo: a control on Produce answers a kgo producer itself
// and nothing is appended; removed, the producer's records go through.
// A control on every API sees kgo's requests with its client id.
func TestControlWithKgo(t *testing.T) {
	t.Parallel()
	b := start(t, Config{Topics: map[string]int32{"orders": 1}})
	var mu sync.Mutex
	seen := map[int16]string{}
	watch, err := b.Control(func(cr *ControlRequest) (kmsg.Response, error) {
		mu.Lock()
		defer mu.Unlock()
		seen[cr.Key] = cr.ClientID
		return nil, nil
	})
	require.NoError(t, err)
	refuse, err := b.ControlKey(kmsg.Produce.Int16(), func(cr *ControlRequest) (kmsg.Response, error) {
		req := cr.Request.(*kmsg.ProduceRequest)
		resp := req.ResponseKind().(*kmsg.ProduceResponse)
		for _, topic := range req.Topics {
			rt := kmsg.ProduceResponseTopic{Topic: topic.Topic}
			for _, p := range topic.Partitions {
				rt.Partitions = append(rt.Partitions, kmsg.ProduceResponseTopicPartition{Partition: p.Partition, ErrorCode: kerr.TopicAuthorizationFailed.Code})
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp, nil
	})
	require.NoError(t, err)
	_, err = b.ControlKey(9999, func(*ControlRequest) (kmsg.Response, error) { return nil, nil })
	require.EqualError(t, err, "control: API key 9999 is not one this broker serves")

	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.ClientID("producer"), kgo.DefaultProduceTopic("orders"))
	require.NoError(t, err)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
	defer cancel()
	err = cl.ProduceSync(ctx, &kgo.Record{Value: []byte("refused")}).FirstErr()
	require.ErrorIs(t, err, kerr.TopicAuthorizationFailed)
	parts, err := b.Partitions("orders")
	require.NoError(t, err)
	require.Zero(t, parts[0].HighWatermark, "the answered produce appended nothing")

	refuse.Remove()
	require.NoError(t, cl.ProduceSync(ctx, &kgo.Record{Value: []byte("accepted")}).FirstErr())
	parts, err = b.Partitions("orders")
	require.NoError(t, err)
	require.Equal(t, int64(1), parts[0].HighWatermark)

	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, "producer", seen[kmsg.ApiVersions.Int16()])
	require.Equal(t, "producer", seen[kmsg.Metadata.Int16()])
	require.Equal(t, "producer", seen[kmsg.Produce.Int16()])
	require.GreaterOrEqual(t, watch.Calls(), int64(4), "ApiVersions, Metadata, InitProducerID and two Produce at least")
}
