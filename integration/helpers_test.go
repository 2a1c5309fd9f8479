// Package integration holds black-box tests of minibroker over real
// loopback sockets: raw kmsg requests through testkit/wiretest where exact
// codes matter (the wire_* files), franz-go clients (kgo_*, kadm_*), the
// admin API (admin_*), and the binary run as a process (crash_*,
// hostile_*). Every in-process broker comes from startBroker.
package integration

import (
	"context"
	"log/slog"
	"net"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/broker"
	"github.com/minibroker/minibroker/internal/testutil"
	"github.com/minibroker/minibroker/testkit/wiretest"
	"github.com/minibroker/minibroker/wireclient"
)

// minibrokerPkg is the binary the process-level tests build and run.
const minibrokerPkg = "github.com/minibroker/minibroker/cmd/minibroker"

// TestMain removes the binaries the process-level tests built.
func TestMain(m *testing.M) {
	code := m.Run()
	testutil.RemoveBuilds()
	os.Exit(code)
}

// waitTimeout bounds every network wait and every poll of a test.
const waitTimeout = 10 * time.Second

// session is the session timeout of the tests' joins.
const session = 30 * time.Second

// defaultTopics is the chapter's catalog: orders(4), payments(1).
func defaultTopics() map[string]int32 { return map[string]int32{"orders": 4, "payments": 1} }

// testBroker is one in-process minibroker, started by broker.Start, with
// its log recorded.
type testBroker struct {
	*broker.Broker
	// Logs records every record the broker logs, unless a test gave the
	// broker a logger of its own.
	Logs *testutil.LogRecorder
}

// startBroker is the one way a test of this package starts a broker in
// process: on 127.0.0.1:0 with the chapter's topics (defaultTopics), a
// fresh data dir, a manual clock at Unix 0 (no expiry ticker: tests call
// Advance and Expire) and its log recorded, Warn and above also in the
// test's output. Each adjust changes that configuration before the start,
// in order: kgoConfig (the real clock, as the kgo and kadm tests run it),
// adminConfig (the admin API, in memory), a data dir to restart on,
// limits, a faulty file system. Cleanup closes the broker and fails the
// test if that fails. A broker run as a process is startProcess's.
func startBroker(t *testing.T, adjust ...func(*broker.Config)) *testBroker {
	t.Helper()
	logs := testutil.NewLogRecorder(t.Output(), slog.LevelWarn)
	cfg := broker.Config{Topics: defaultTopics(), DataDir: t.TempDir(), ManualClock: true, Logger: logs.Logger()}
	for _, f := range adjust {
		f(&cfg)
	}
	b, err := broker.Start(context.Background(), cfg)
	require.NoError(t, err)
	t.Cleanup(func() {
		if err := b.Close(); err != nil {
			t.Errorf("closing the broker: %v", err)
		}
	})
	return &testBroker{Broker: b, Logs: logs}
}

// port is the port of the broker's address.
func (b *testBroker) port(t *testing.T) int32 {
	t.Helper()
	_, p, err := net.SplitHostPort(b.Addr())
	require.NoError(t, err)
	n, err := strconv.Atoi(p)
	require.NoError(t, err)
	return int32(n)
}

// protocolSpec is one JoinGroup protocol: an assignor name and the topics
// its ConsumerMemberMetadata subscribes to.
type protocolSpec struct {
	name   string
	topics []string
}

// joinRequest is a consumer JoinGroup at version, with one "roundrobin"
// protocol for topics.
func joinRequest(version int16, group, member string, topics ...string) *kmsg.JoinGroupRequest {
	return wiretest.JoinRequest(version, group, member, session, topics...)
}

func joinRequestProtocols(version int16, group, member string, protocols ...protocolSpec) *kmsg.JoinGroupRequest {
	req := kmsg.NewPtrJoinGroupRequest()
	req.Version, req.Group, req.MemberID = version, group, member
	req.SessionTimeoutMillis = int32(session / time.Millisecond)
	req.RebalanceTimeoutMillis = req.SessionTimeoutMillis
	req.ProtocolType = "consumer"
	for _, p := range protocols {
		req.Protocols = append(req.Protocols, kmsg.JoinGroupRequestProtocol{Name: p.name, Metadata: wiretest.ConsumerMetadata(0, p.topics...)})
	}
	return req
}

// join runs a v9 join as kgo does: an empty member id gets
// MEMBER_ID_REQUIRED and an id, then joins with it. It requires success.
func join(t *testing.T, c *wireclient.Client, group string, topics ...string) *kmsg.JoinGroupResponse {
	t.Helper()
	return joinWith(t, c, joinRequest(9, group, "", topics...))
}

func joinWith(t *testing.T, c *wireclient.Client, req *kmsg.JoinGroupRequest) *kmsg.JoinGroupResponse {
	t.Helper()
	first := wiretest.Do[*kmsg.JoinGroupResponse](t, c, req)
	require.Equal(t, int16(79), first.ErrorCode, "MEMBER_ID_REQUIRED")
	again := *req
	again.MemberID = first.MemberID
	resp := wiretest.Do[*kmsg.JoinGroupResponse](t, c, &again)
	require.Zero(t, resp.ErrorCode, "join with %s", first.MemberID)
	require.Equal(t, first.MemberID, resp.MemberID)
	return resp
}

// rejoin re-joins a known member with topics and returns the response,
// whatever its code.
func rejoin(t *testing.T, c *wireclient.Client, group, member string, topics ...string) *kmsg.JoinGroupResponse {
	t.Helper()
	return wiretest.Do[*kmsg.JoinGroupResponse](t, c, joinRequest(9, group, member, topics...))
}

// assignment syncs a member and returns its decoded assignment.
func assignment(t *testing.T, c *wireclient.Client, group, member string, generation int32) []string {
	t.Helper()
	resp := wiretest.Do[*kmsg.SyncGroupResponse](t, c, wiretest.SyncRequest(5, group, member, generation))
	require.Zero(t, resp.ErrorCode, "sync %s", member)
	return wiretest.Assignment(t, resp.MemberAssignment)
}

func heartbeat(t *testing.T, c *wireclient.Client, group, member string, generation int32) int16 {
	t.Helper()
	return wiretest.Do[*kmsg.HeartbeatResponse](t, c, wiretest.HeartbeatRequest(4, group, member, generation)).ErrorCode
}

// tp is one partition with an offset, for commits and fetches.
type tp struct {
	topic     string
	partition int32
	offset    int64
}

func commitRequest(version int16, group, member string, generation int32, parts ...tp) *kmsg.OffsetCommitRequest {
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Version, req.Group, req.MemberID, req.Generation = version, group, member, generation
	for _, p := range parts {
		n := len(req.Topics)
		if n == 0 || req.Topics[n-1].Topic != p.topic {
			req.Topics = append(req.Topics, kmsg.OffsetCommitRequestTopic{Topic: p.topic})
			n++
		}
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset = p.partition, p.offset
		req.Topics[n-1].Partitions = append(req.Topics[n-1].Partitions, rp)
	}
	return req
}

// commit sends an OffsetCommit v9 and returns the code of every
// partition, in request order, after checking that the response names
// every requested partition.
func commit(t *testing.T, c *wireclient.Client, group, member string, generation int32, parts ...tp) []int16 {
	t.Helper()
	return wiretest.Commit(t, c, commitRequest(9, group, member, generation, parts...))
}

// repeat returns n copies of code.
func repeat(code int16, n int) []int16 {
	out := make([]int16, n)
	for i := range out {
		out[i] = code
	}
	return out
}

// fetchOffsets asks OffsetFetch v7 for the named partitions of group and
// returns "topic-partition" -> offset.
func fetchOffsets(t *testing.T, c *wireclient.Client, group string, parts ...tp) map[string]int64 {
	t.Helper()
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Version, req.Group = 7, group
	req.Topics = []kmsg.OffsetFetchRequestTopic{}
	for _, p := range parts {
		n := len(req.Topics)
		if n == 0 || req.Topics[n-1].Topic != p.topic {
			req.Topics = append(req.Topics, kmsg.OffsetFetchRequestTopic{Topic: p.topic})
			n++
		}
		req.Topics[n-1].Partitions = append(req.Topics[n-1].Partitions, p.partition)
	}
	resp := wiretest.Do[*kmsg.OffsetFetchResponse](t, c, req)
	require.Zero(t, resp.ErrorCode)
	out := map[string]int64{}
	for _, rt := range resp.Topics {
		for _, p := range rt.Partitions {
			require.Zero(t, p.ErrorCode)
			out[rt.Topic+"-"+strconv.Itoa(int(p.Partition))] = p.Offset
		}
	}
	return out
}

func describe(t *testing.T, c *wireclient.Client, groups ...string) []kmsg.DescribeGroupsResponseGroup {
	t.Helper()
	req := kmsg.NewPtrDescribeGroupsRequest()
	req.Version, req.Groups = 5, groups
	resp := wiretest.Do[*kmsg.DescribeGroupsResponse](t, c, req)
	require.Len(t, resp.Groups, len(groups))
	return resp.Groups
}

// apiVersionsRequest is an ApiVersions request with a valid client
// software name and version (checked from v3).
func apiVersionsRequest(version int16) *kmsg.ApiVersionsRequest {
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = version
	req.ClientSoftwareName, req.ClientSoftwareVersion = "integration", "1.0"
	return req
}

// eventually polls cond until it holds or waitTimeout passes.
func eventually(t *testing.T, cond func() bool, msg string) {
	t.Helper()
	testutil.Eventually(t, waitTimeout, testutil.Holds(cond, msg))
}

// deadline is a connection deadline waitTimeout from now.
func deadline() time.Time { return time.Now().Add(waitTimeout) }
