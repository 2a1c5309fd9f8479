package server

import (
	"log/slog"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// recordingObserver keeps every Observer call.
type recordingObserver struct {
	mu       sync.Mutex
	requests []observedRequest // guarded by mu
	commits  []int16           // guarded by mu; error codes
	fenced   []FencingEvent    // guarded by mu
	opened   int               // guarded by mu
	closed   int               // guarded by mu
}

type observedRequest struct {
	api, version, code int16
}

func (o *recordingObserver) RequestDone(api, version, code int16, elapsed time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.requests = append(o.requests, observedRequest{api, version, code})
}

func (o *recordingObserver) CommitDone(elapsed time.Duration, code int16) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.commits = append(o.commits, code)
}

func (o *recordingObserver) Fenced(ev FencingEvent) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.fenced = append(o.fenced, ev)
}

func (o *recordingObserver) ConnOpened() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.opened++
}

func (o *recordingObserver) ConnClosed() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.closed++
}

func (o *recordingObserver) snapshot() recordingObserver {
	o.mu.Lock()
	defer o.mu.Unlock()
	return recordingObserver{
		requests: append([]observedRequest(nil), o.requests...),
		commits:  append([]int16(nil), o.commits...),
		fenced:   append([]FencingEvent(nil), o.fenced...),
		opened:   o.opened,
		closed:   o.closed,
	}
}

func newObservedEnv(t *testing.T) (*env, *recordingObserver) {
	obs := &recordingObserver{}
	return newEnvWith(t, envOptions{config: func(cfg *Config) { cfg.Observer = obs }}), obs
}

// observedCommitRequest is an OffsetCommit v8 of one orders partition.
func observedCommitRequest(group, member string, generation, partition int32) *kmsg.OffsetCommitRequest {
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Version = 8
	req.Group, req.MemberID, req.Generation = group, member, generation
	req.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "orders", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: partition, Offset: 5}}}}
	return req
}

// TestObserverFencingRejections: every way the coordinator fences a stale
// or unknown member is reported once and logged at Info, and nothing else
// is.
func TestObserverFencingRejections(t *testing.T) {
	t.Parallel()
	e, obs := newObservedEnv(t)
	a := e.join("c", "g", "", "orders").MemberID // c-000001, generation 1
	b := e.join("c", "g", "", "orders").MemberID // c-000002, generation 2; a owns orders-0 and -2

	heartbeat := func(member string, gen int32) *kmsg.HeartbeatResponse {
		req := kmsg.NewPtrHeartbeatRequest()
		req.Version, req.Group, req.MemberID, req.Generation = 4, "g", member, gen
		return call[*kmsg.HeartbeatResponse](e, "c", req)
	}
	syncReq := kmsg.NewPtrSyncGroupRequest()
	syncReq.Version, syncReq.Group, syncReq.MemberID, syncReq.Generation = 5, "g", a, 1

	require.Equal(t, kerr.IllegalGeneration.Code, heartbeat(a, 1).ErrorCode)
	require.Equal(t, kerr.IllegalGeneration.Code, call[*kmsg.SyncGroupResponse](e, "c", syncReq).ErrorCode)
	require.Equal(t, kerr.IllegalGeneration.Code, call[*kmsg.OffsetCommitResponse](e, "c", observedCommitRequest("g", a, 1, 0)).Topics[0].Partitions[0].ErrorCode)
	require.Equal(t, kerr.RebalanceInProgress.Code, call[*kmsg.OffsetCommitResponse](e, "c", observedCommitRequest("g", a, 2, 1)).Topics[0].Partitions[0].ErrorCode)
	require.Equal(t, kerr.UnknownMemberID.Code, heartbeat("ghost", 2).ErrorCode)
	require.Equal(t, kerr.UnknownMemberID.Code, call[*kmsg.JoinGroupResponse](e, "c", joinRequest(9, "g", "ghost", "orders")).ErrorCode)
	// Not fencing: success, a bad group id, a direct commit of a missing
	// partition, a member id handed out by MEMBER_ID_REQUIRED.
	require.Zero(t, heartbeat(b, 2).ErrorCode)
	require.Zero(t, call[*kmsg.OffsetCommitResponse](e, "c", observedCommitRequest("g", b, 2, 1)).Topics[0].Partitions[0].ErrorCode)
	require.Equal(t, kerr.InvalidGroupID.Code, call[*kmsg.HeartbeatResponse](e, "c", kmsg.NewPtrHeartbeatRequest()).ErrorCode)
	require.Equal(t, kerr.UnknownTopicOrPartition.Code, call[*kmsg.OffsetCommitResponse](e, "c", observedCommitRequest("g", "", -1, 9)).Topics[0].Partitions[0].ErrorCode)
	require.Equal(t, kerr.MemberIDRequired.Code, call[*kmsg.JoinGroupResponse](e, "c", joinRequest(9, "g", "", "orders")).ErrorCode)

	want := []FencingEvent{
		{Group: "g", MemberID: a, API: "Heartbeat", Generation: 1, Code: kerr.IllegalGeneration.Code},
		{Group: "g", MemberID: a, API: "SyncGroup", Generation: 1, Code: kerr.IllegalGeneration.Code},
		{Group: "g", MemberID: a, API: "OffsetCommit", Generation: 1, Code: kerr.IllegalGeneration.Code},
		{Group: "g", MemberID: a, API: "OffsetCommit", Generation: 2, Code: kerr.RebalanceInProgress.Code},
		{Group: "g", MemberID: "ghost", API: "Heartbeat", Generation: 2, Code: kerr.UnknownMemberID.Code},
		{Group: "g", MemberID: "ghost", API: "JoinGroup", Generation: -1, Code: kerr.UnknownMemberID.Code},
	}
	got := obs.snapshot()
	require.Equal(t, want, got.fenced)
	require.Equal(t, []int16{kerr.IllegalGeneration.Code, kerr.RebalanceInProgress.Code, 0, kerr.UnknownTopicOrPartition.Code}, got.commits)

	logs := e.logs.Find("fencing rejection")
	require.Len(t, logs, len(want))
	for i, w := range want {
		require.Equal(t, slog.LevelInfo, logs[i].Level)
		require.Equal(t, map[string]string{
			"group": w.Group, "member": w.MemberID, "api": w.API,
			"generation": strconv.Itoa(int(w.Generation)), "code": CodeName(w.Code),
		}, logs[i].Attrs)
	}
}

// TestObserverOverTheWire: requests are reported with their API, version
// and code before the response is written, and connections are bracketed.
func TestObserverOverTheWire(t *testing.T) {
	t.Parallel()
	e, obs := newObservedEnv(t)
	c := dial(t, e.serve(), "wire")
	roundTrip[*kmsg.ApiVersionsResponse](t, c, apiVersionsRequest(3))
	hb := kmsg.NewPtrHeartbeatRequest()
	hb.Version, hb.Group, hb.MemberID, hb.Generation = 4, "nobody", "m", 1
	roundTrip[*kmsg.HeartbeatResponse](t, c, hb)

	got := obs.snapshot()
	require.Equal(t, []observedRequest{
		{int16(kmsg.ApiVersions), 3, 0},
		{int16(kmsg.Heartbeat), 4, kerr.UnknownMemberID.Code},
	}, got.requests, "reported before each response was written")
	require.Equal(t, 1, got.opened)
	require.Zero(t, got.closed)

	c.Close()
	eventually(t, testTimeout, func() bool { return obs.snapshot().closed == 1 }, "connection close reported")
}

// TestNilObserver: a server without an observer works as before.
func TestNilObserver(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	require.Equal(t, nopObserver{}, e.srv.observer)
	a := e.join("c", "g", "", "orders").MemberID
	require.Equal(t, kerr.IllegalGeneration.Code, call[*kmsg.OffsetCommitResponse](e, "c", observedCommitRequest("g", a, 7, 0)).Topics[0].Partitions[0].ErrorCode)
	require.Len(t, e.logs.Find("fencing rejection"), 1)
}

func TestCodeName(t *testing.T) {
	t.Parallel()
	require.Equal(t, "NONE", CodeName(0))
	require.Equal(t, "ILLEGAL_GENERATION", CodeName(22))
	require.Equal(t, "UNKNOWN_MEMBER_ID", CodeName(25))
	require.Equal(t, "REBALANCE_IN_PROGRESS", CodeName(27))
	require.Equal(t, "UNKNOWN_SERVER_ERROR", CodeName(-1))
	require.Equal(t, "UNKNOWN_CODE", CodeName(9999))
}

// TestResponseErrorCode: the first non-zero code, top level first, for
// every response the server sends.
func TestResponseErrorCode(t *testing.T) {
	t.Parallel()
	const x, y = 3, 22
	for _, tc := range []struct {
		name string
		resp kmsg.Response
		want int16
	}{
		{"ApiVersions", &kmsg.ApiVersionsResponse{ErrorCode: 35}, 35},
		{"Metadata none", &kmsg.MetadataResponse{Topics: []kmsg.MetadataResponseTopic{{}}}, 0},
		{"Metadata topic", &kmsg.MetadataResponse{Topics: []kmsg.MetadataResponseTopic{{}, {ErrorCode: x}}}, x},
		{"Metadata partition", &kmsg.MetadataResponse{Topics: []kmsg.MetadataResponseTopic{{Partitions: []kmsg.MetadataResponseTopicPartition{{}, {ErrorCode: y}}}}}, y},
		{"Metadata top level", &kmsg.MetadataResponse{ErrorCode: y, Topics: []kmsg.MetadataResponseTopic{{ErrorCode: x}}}, y},
		{"FindCoordinator", &kmsg.FindCoordinatorResponse{ErrorCode: 15}, 15},
		{"FindCoordinator v4", &kmsg.FindCoordinatorResponse{Coordinators: []kmsg.FindCoordinatorResponseCoordinator{{}, {ErrorCode: 15}}}, 15},
		{"JoinGroup", &kmsg.JoinGroupResponse{ErrorCode: 79}, 79},
		{"SyncGroup", &kmsg.SyncGroupResponse{ErrorCode: y}, y},
		{"Heartbeat", &kmsg.HeartbeatResponse{ErrorCode: 25}, 25},
		{"LeaveGroup", &kmsg.LeaveGroupResponse{ErrorCode: 24}, 24},
		{"LeaveGroup member", &kmsg.LeaveGroupResponse{Members: []kmsg.LeaveGroupResponseMember{{}, {ErrorCode: 25}}}, 25},
		{"OffsetCommit none", &kmsg.OffsetCommitResponse{Topics: []kmsg.OffsetCommitResponseTopic{{Partitions: []kmsg.OffsetCommitResponseTopicPartition{{}}}}}, 0},
		{"OffsetCommit", &kmsg.OffsetCommitResponse{Topics: []kmsg.OffsetCommitResponseTopic{{Partitions: []kmsg.OffsetCommitResponseTopicPartition{{ErrorCode: 27}}}}}, 27},
		{"OffsetFetch", &kmsg.OffsetFetchResponse{ErrorCode: 16}, 16},
		{"OffsetFetch partition", &kmsg.OffsetFetchResponse{Topics: []kmsg.OffsetFetchResponseTopic{{Partitions: []kmsg.OffsetFetchResponseTopicPartition{{ErrorCode: x}}}}}, x},
		{"OffsetFetch group", &kmsg.OffsetFetchResponse{Groups: []kmsg.OffsetFetchResponseGroup{{}, {ErrorCode: 16}}}, 16},
		{"OffsetFetch group partition", &kmsg.OffsetFetchResponse{Groups: []kmsg.OffsetFetchResponseGroup{{Topics: []kmsg.OffsetFetchResponseGroupTopic{{Partitions: []kmsg.OffsetFetchResponseGroupTopicPartition{{ErrorCode: x}}}}}}}, x},
		{"DescribeGroups", &kmsg.DescribeGroupsResponse{Groups: []kmsg.DescribeGroupsResponseGroup{{}, {ErrorCode: 24}}}, 24},
		{"ListGroups", &kmsg.ListGroupsResponse{ErrorCode: 15}, 15},
		{"CreateTopics", &kmsg.CreateTopicsResponse{Topics: []kmsg.CreateTopicsResponseTopic{{}, {ErrorCode: 36}}}, 36},
		{"ListOffsets", &kmsg.ListOffsetsResponse{Topics: []kmsg.ListOffsetsResponseTopic{{Partitions: []kmsg.ListOffsetsResponseTopicPartition{{ErrorCode: x}}}}}, x},
		{"Fetch", &kmsg.FetchResponse{ErrorCode: 70}, 70},
		{"Fetch partition", &kmsg.FetchResponse{Topics: []kmsg.FetchResponseTopic{{Partitions: []kmsg.FetchResponseTopicPartition{{ErrorCode: x}}}}}, x},
		{"Fetch none", &kmsg.FetchResponse{}, 0},
		{"ConsumerGroupHeartbeat", &kmsg.ConsumerGroupHeartbeatResponse{ErrorCode: 110}, 110},
		{"ConsumerGroupDescribe", &kmsg.ConsumerGroupDescribeResponse{Groups: []kmsg.ConsumerGroupDescribeResponseGroup{{}, {ErrorCode: 69}}}, 69},
		{"ConsumerGroupDescribe none", &kmsg.ConsumerGroupDescribeResponse{Groups: []kmsg.ConsumerGroupDescribeResponseGroup{{}}}, 0},
		{"DeleteGroups", &kmsg.DeleteGroupsResponse{Groups: []kmsg.DeleteGroupsResponseGroup{{}, {ErrorCode: 68}}}, 68},
		{"DeleteGroups none", &kmsg.DeleteGroupsResponse{Groups: []kmsg.DeleteGroupsResponseGroup{{}}}, 0},
		{"OffsetDelete", &kmsg.OffsetDeleteResponse{ErrorCode: 69}, 69},
		{"OffsetDelete partition", &kmsg.OffsetDeleteResponse{Topics: []kmsg.OffsetDeleteResponseTopic{{Partitions: []kmsg.OffsetDeleteResponseTopicPartition{{}, {ErrorCode: 86}}}}}, 86},
		{"OffsetDelete none", &kmsg.OffsetDeleteResponse{Topics: []kmsg.OffsetDeleteResponseTopic{{Partitions: []kmsg.OffsetDeleteResponseTopicPartition{{}}}}}, 0},
		{"not served", &kmsg.ProduceResponse{}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, ResponseErrorCode(tc.resp))
		})
	}
}
