// Package integration holds black-box tests of minibroker over real
// loopback sockets: raw kmsg requests through protocol.Client where exact
// codes matter (the wire_* files), and franz-go clients.
package integration

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/clock"
	"github.com/minibroker/minibroker/coordinator"
	"github.com/minibroker/minibroker/internal/catalog"
	"github.com/minibroker/minibroker/offsets"
	"github.com/minibroker/minibroker/protocol"
	"github.com/minibroker/minibroker/server"
)

// waitTimeout bounds every network wait and every poll of a test.
const waitTimeout = 10 * time.Second

// session is the session timeout of the tests' joins.
const session = 30 * time.Second

// defaultTopics is the chapter's catalog: orders(4), payments(1).
func defaultTopics() map[string]int32 { return map[string]int32{"orders": 4, "payments": 1} }

// brokerOptions configures startBroker. Zero fields mean: the default
// topics, a fresh data dir, a manual clock at Unix 0 and no expiry ticker.
type brokerOptions struct {
	Topics map[string]int32
	// Dir is the data dir; reuse one to restart a broker on its data.
	Dir string
	// RealClock runs on the system clock; ExpiryInterval then drives the
	// expiry step.
	RealClock      bool
	ExpiryInterval time.Duration
	MaxFrameBytes  int32
	Advertise      string
	// Store, Coord and Server adjust the configurations last, for tests of
	// limits and faults.
	Store  func(*offsets.Config)
	Coord  func(*coordinator.Config)
	Server func(*server.Config)
	// Quiet logs Error and above to the test's output only, recording
	// nothing: for tests that flood the broker with peers it warns about.
	Quiet bool
}

// broker is one in-process minibroker on 127.0.0.1:0.
type broker struct {
	Addr  string
	Dir   string
	Coord *coordinator.Coordinator
	Clock *clock.Manual // nil on the real clock
	Logs  *logRecorder

	store    *offsets.Store
	cancel   context.CancelFunc
	served   chan error
	stopOnce sync.Once
	stopErr  error
}

// startBroker builds the offsets store and topic catalog in a data dir, a
// coordinator, a server and a loopback listener, and serves. Cleanup stops
// it (see stop).
func startBroker(t *testing.T, opts brokerOptions) *broker {
	t.Helper()
	b := &broker{Dir: opts.Dir, Logs: &logRecorder{}}
	if b.Dir == "" {
		b.Dir = t.TempDir()
	}
	cat, topics, err := catalog.Open(b.Dir)
	require.NoError(t, err)
	want := opts.Topics
	if want == nil {
		want = defaultTopics()
	}
	added := false
	for name, n := range want {
		if _, ok := topics[name]; !ok {
			topics[name], added = n, true
		}
	}
	if added {
		require.NoError(t, cat.SaveTopics(topics))
	}
	storeCfg := offsets.Config{Dir: b.Dir}
	if opts.Store != nil {
		opts.Store(&storeCfg)
	}
	b.store, err = offsets.Open(storeCfg)
	require.NoError(t, err)

	logger := slog.New(&logHandler{rec: b.Logs, out: slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn})})
	if opts.Quiet {
		logger = slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelError}))
	}
	var clk coordinator.Clock = clock.System{}
	if !opts.RealClock {
		b.Clock = clock.NewManual(time.UnixMilli(0))
		clk = b.Clock
	}
	coordCfg := coordinator.Config{Clock: clk, Store: b.store, Topics: topics, Logger: logger}
	if opts.Coord != nil {
		opts.Coord(&coordCfg)
	}
	b.Coord, err = coordinator.New(coordCfg)
	require.NoError(t, err)
	srvCfg := server.Config{
		Coordinator: b.Coord, Logger: logger, Advertise: opts.Advertise, MaxFrameBytes: opts.MaxFrameBytes,
		ExpiryInterval: opts.ExpiryInterval, Topics: cat,
	}
	if opts.Server != nil {
		opts.Server(&srvCfg)
	}
	srv, err := server.New(srvCfg)
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	b.Addr = ln.Addr().String()
	ctx, cancel := context.WithCancel(context.Background())
	b.cancel, b.served = cancel, make(chan error, 1)
	go func() { b.served <- srv.Serve(ctx, ln) }()
	t.Cleanup(func() {
		if err := b.stop(); err != nil {
			t.Errorf("stopping broker: %v", err)
		}
	})
	return b
}

// stop cancels Serve, waits for it to return, then closes the store so
// every acknowledged commit is on disk. It is idempotent.
func (b *broker) stop() error {
	b.stopOnce.Do(func() {
		b.cancel()
		select {
		case err := <-b.served:
			b.stopErr = err
		case <-time.After(waitTimeout):
			b.stopErr = errors.New("Serve did not return after cancel")
		}
		if err := b.store.Close(); err != nil && b.stopErr == nil {
			b.stopErr = err
		}
	})
	return b.stopErr
}

// host and port split the broker's address.
func (b *broker) host() string {
	h, _, _ := net.SplitHostPort(b.Addr)
	return h
}

func (b *broker) port(t *testing.T) int32 {
	t.Helper()
	_, p, err := net.SplitHostPort(b.Addr)
	require.NoError(t, err)
	n, err := strconv.Atoi(p)
	require.NoError(t, err)
	return int32(n)
}

// dial opens a raw client with clientID; cleanup closes it.
func (b *broker) dial(t *testing.T, clientID string) *protocol.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
	defer cancel()
	c, err := protocol.Dial(ctx, b.Addr, clientID)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

// do sends req on c and returns its typed response.
func do[R kmsg.Response](t *testing.T, c *protocol.Client, req kmsg.Request) R {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
	defer cancel()
	resp, err := c.Request(ctx, req)
	require.NoError(t, err, "%s v%d", kmsg.NameForKey(req.Key()), req.GetVersion())
	typed, ok := resp.(R)
	require.True(t, ok, "response type %T", resp)
	return typed
}

// requireEOF waits for the broker to close c: the next read sees EOF (or
// a reset), never a frame and never the deadline.
func requireEOF(t *testing.T, c *protocol.Client) {
	t.Helper()
	require.NoError(t, c.SetDeadline(time.Now().Add(waitTimeout)))
	frame, err := c.ReadFrame()
	require.Error(t, err, "the broker must close the connection; got frame %x", frame)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("the broker did not close the connection within %v", waitTimeout)
	}
	require.True(t, errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		strings.Contains(err.Error(), "connection reset"), "want EOF, got %v", err)
}

// protocolSpec is one JoinGroup protocol: an assignor name and the topics
// its ConsumerMemberMetadata subscribes to.
type protocolSpec struct {
	name   string
	topics []string
}

// consumerMetadata encodes a ConsumerMemberMetadata v0 for topics.
func consumerMetadata(topics ...string) []byte {
	m := kmsg.NewConsumerMemberMetadata()
	m.Topics = topics
	return m.AppendTo(nil)
}

// joinRequest is a consumer JoinGroup at version, with one "roundrobin"
// protocol for topics.
func joinRequest(version int16, group, member string, topics ...string) *kmsg.JoinGroupRequest {
	return joinRequestProtocols(version, group, member, protocolSpec{"roundrobin", topics})
}

func joinRequestProtocols(version int16, group, member string, protocols ...protocolSpec) *kmsg.JoinGroupRequest {
	req := kmsg.NewPtrJoinGroupRequest()
	req.Version, req.Group, req.MemberID = version, group, member
	req.SessionTimeoutMillis = int32(session / time.Millisecond)
	req.RebalanceTimeoutMillis = req.SessionTimeoutMillis
	req.ProtocolType = "consumer"
	for _, p := range protocols {
		req.Protocols = append(req.Protocols, kmsg.JoinGroupRequestProtocol{Name: p.name, Metadata: consumerMetadata(p.topics...)})
	}
	return req
}

// join runs a v9 join as kgo does: an empty member id gets
// MEMBER_ID_REQUIRED and an id, then joins with it. It requires success.
func join(t *testing.T, c *protocol.Client, group string, topics ...string) *kmsg.JoinGroupResponse {
	t.Helper()
	return joinWith(t, c, joinRequest(9, group, "", topics...))
}

func joinWith(t *testing.T, c *protocol.Client, req *kmsg.JoinGroupRequest) *kmsg.JoinGroupResponse {
	t.Helper()
	first := do[*kmsg.JoinGroupResponse](t, c, req)
	require.Equal(t, int16(79), first.ErrorCode, "MEMBER_ID_REQUIRED")
	again := *req
	again.MemberID = first.MemberID
	resp := do[*kmsg.JoinGroupResponse](t, c, &again)
	require.Zero(t, resp.ErrorCode, "join with %s", first.MemberID)
	require.Equal(t, first.MemberID, resp.MemberID)
	return resp
}

// rejoin re-joins a known member with topics and returns the response,
// whatever its code.
func rejoin(t *testing.T, c *protocol.Client, group, member string, topics ...string) *kmsg.JoinGroupResponse {
	t.Helper()
	return do[*kmsg.JoinGroupResponse](t, c, joinRequest(9, group, member, topics...))
}

func syncRequest(version int16, group, member string, generation int32) *kmsg.SyncGroupRequest {
	req := kmsg.NewPtrSyncGroupRequest()
	req.Version, req.Group, req.MemberID, req.Generation = version, group, member, generation
	return req
}

// assignment syncs a member and returns its decoded assignment.
func assignment(t *testing.T, c *protocol.Client, group, member string, generation int32) []string {
	t.Helper()
	resp := do[*kmsg.SyncGroupResponse](t, c, syncRequest(5, group, member, generation))
	require.Zero(t, resp.ErrorCode, "sync %s", member)
	return decodeAssignment(t, resp.MemberAssignment)
}

// decodeAssignment parses ConsumerMemberAssignment bytes into
// "topic-partition" strings, failing on bytes kgo could not parse.
func decodeAssignment(t *testing.T, raw []byte) []string {
	t.Helper()
	var a kmsg.ConsumerMemberAssignment
	require.NoError(t, a.ReadFrom(raw), "assignment bytes %x", raw)
	out := []string{}
	for _, topic := range a.Topics {
		for _, p := range topic.Partitions {
			out = append(out, topic.Topic+"-"+strconv.Itoa(int(p)))
		}
	}
	return out
}

func heartbeatRequest(version int16, group, member string, generation int32) *kmsg.HeartbeatRequest {
	req := kmsg.NewPtrHeartbeatRequest()
	req.Version, req.Group, req.MemberID, req.Generation = version, group, member, generation
	return req
}

func heartbeat(t *testing.T, c *protocol.Client, group, member string, generation int32) int16 {
	t.Helper()
	return do[*kmsg.HeartbeatResponse](t, c, heartbeatRequest(4, group, member, generation)).ErrorCode
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
func commit(t *testing.T, c *protocol.Client, group, member string, generation int32, parts ...tp) []int16 {
	t.Helper()
	return commitCodes(t, c, commitRequest(9, group, member, generation, parts...))
}

func commitCodes(t *testing.T, c *protocol.Client, req *kmsg.OffsetCommitRequest) []int16 {
	t.Helper()
	resp := do[*kmsg.OffsetCommitResponse](t, c, req)
	require.Len(t, resp.Topics, len(req.Topics), "every requested topic is answered")
	var codes []int16
	for i, rt := range req.Topics {
		require.Equal(t, rt.Topic, resp.Topics[i].Topic)
		require.Len(t, resp.Topics[i].Partitions, len(rt.Partitions), "every requested partition is answered")
		for j, p := range rt.Partitions {
			require.Equal(t, p.Partition, resp.Topics[i].Partitions[j].Partition)
			codes = append(codes, resp.Topics[i].Partitions[j].ErrorCode)
		}
	}
	return codes
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
func fetchOffsets(t *testing.T, c *protocol.Client, group string, parts ...tp) map[string]int64 {
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
	resp := do[*kmsg.OffsetFetchResponse](t, c, req)
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

func leaveRequest(version int16, group string, members ...string) *kmsg.LeaveGroupRequest {
	req := kmsg.NewPtrLeaveGroupRequest()
	req.Version, req.Group = version, group
	if version < 3 {
		req.MemberID = members[0]
		return req
	}
	for _, m := range members {
		req.Members = append(req.Members, kmsg.LeaveGroupRequestMember{MemberID: m})
	}
	return req
}

func describe(t *testing.T, c *protocol.Client, groups ...string) []kmsg.DescribeGroupsResponseGroup {
	t.Helper()
	req := kmsg.NewPtrDescribeGroupsRequest()
	req.Version, req.Groups = 5, groups
	resp := do[*kmsg.DescribeGroupsResponse](t, c, req)
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

// logRecorder keeps every log record's message and attributes.
type logRecorder struct {
	mu      sync.Mutex
	records []logRecord // guarded by mu
}

type logRecord struct {
	Level slog.Level
	Msg   string
	Attrs map[string]string
}

func (r *logRecorder) find(msg string) []logRecord {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []logRecord
	for _, rec := range r.records {
		if rec.Msg == msg {
			out = append(out, rec)
		}
	}
	return out
}

// logHandler records at every level into rec and passes records to out
// (the test's output), which filters by its own level.
type logHandler struct {
	rec   *logRecorder
	out   slog.Handler
	attrs []slog.Attr
}

func (h *logHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h *logHandler) Handle(ctx context.Context, r slog.Record) error {
	rec := logRecord{Level: r.Level, Msg: r.Message, Attrs: map[string]string{}}
	for _, a := range h.attrs {
		rec.Attrs[a.Key] = a.Value.String()
	}
	r.Attrs(func(a slog.Attr) bool {
		rec.Attrs[a.Key] = a.Value.String()
		return true
	})
	h.rec.mu.Lock()
	h.rec.records = append(h.rec.records, rec)
	h.rec.mu.Unlock()
	if h.out.Enabled(ctx, r.Level) {
		return h.out.Handle(ctx, r)
	}
	return nil
}

func (h *logHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &logHandler{rec: h.rec, out: h.out.WithAttrs(attrs), attrs: append(append([]slog.Attr(nil), h.attrs...), attrs...)}
}

func (h *logHandler) WithGroup(name string) slog.Handler {
	return &logHandler{rec: h.rec, out: h.out.WithGroup(name), attrs: h.attrs}
}

// eventually polls cond until it holds or waitTimeout passes.
func eventually(t *testing.T, cond func() bool, msg string) {
	t.Helper()
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	deadline := time.NewTimer(waitTimeout)
	defer deadline.Stop()
	for !cond() {
		select {
		case <-tick.C:
		case <-deadline.C:
			t.Fatalf("not within %v: %s", waitTimeout, msg)
		}
	}
}

// deadline is a connection deadline waitTimeout from now.
func deadline() time.Time { return time.Now().Add(waitTimeout) }
