package server

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/catalog"
	"github.com/minibroker/minibroker/clock"
	"github.com/minibroker/minibroker/coordinator"
	"github.com/minibroker/minibroker/internal/testutil"
	"github.com/minibroker/minibroker/offsets"
	"github.com/minibroker/minibroker/records"
	"github.com/minibroker/minibroker/testkit/coretest"
	"github.com/minibroker/minibroker/testkit/wiretest"
	"github.com/minibroker/minibroker/wireclient"
)

// testTimeout bounds every wait of a test on the network or on a poll.
const testTimeout = 10 * time.Second

// testSession is the session timeout of fixture joins.
const testSession = 10 * time.Second

// env is one Server over a coordinator on a manual clock (Unix 0) with an
// in-memory store and the chapter's orders(4) and payments(1) topics,
// unless envOptions say otherwise. Handlers are called directly; serve
// puts the server on a loopback socket.
type env struct {
	t     *testing.T
	srv   *Server
	coord *coordinator.Coordinator
	cat   *catalog.Catalog
	log   *records.Log
	clock *clock.Manual // nil with a real clock
	store *offsets.Memory
	logs  *testutil.LogRecorder
}

type envOptions struct {
	topics    map[string]int32
	catalog   catalog.Config // the catalog's configuration, in memory unless Dir is set
	realClock bool
	config    func(*Config) // adjusts the server config before New
	// store, if set, wraps the in-memory offset store the coordinator
	// uses (a test double that stops a read at a chosen point).
	store func(*offsets.Memory) coordinator.OffsetStore
}

func newEnv(t *testing.T) *env {
	t.Helper()
	return newEnvWith(t, envOptions{})
}

func newEnvWith(t *testing.T, opts envOptions) *env {
	t.Helper()
	e := &env{t: t, store: offsets.NewMemory(), logs: testutil.NewLogRecorder(nil, nil)}
	t.Cleanup(func() { // a key given twice is printed twice
		for _, r := range e.logs.Records() {
			if len(r.Repeated) > 0 {
				t.Errorf("log record %q repeats %v: %v", r.Message, r.Repeated, r.Attrs)
			}
		}
	})
	seed := opts.topics
	if seed == nil {
		seed = map[string]int32{"orders": 4, "payments": 1}
	}
	var clk coordinator.Clock = clock.System{}
	if !opts.realClock {
		e.clock = clock.NewManual(time.UnixMilli(0))
		clk = e.clock
	}
	var store coordinator.OffsetStore = e.store
	if opts.store != nil {
		store = opts.store(e.store)
	}
	core := coretest.New(t, coretest.Config{Topics: seed, Catalog: opts.catalog,
		Coordinator: coordinator.Config{Clock: clk, Store: store, Logger: e.logs.Logger()}})
	e.log, e.cat, e.coord = core.Log, core.Catalog, core.Coordinator
	cfg := Config{Coordinator: e.coord, Catalog: e.cat, Log: e.log, Logger: e.logs.Logger()}
	if opts.config != nil {
		opts.config(&cfg)
	}
	srv, err := New(cfg)
	require.NoError(t, err)
	e.srv = srv
	require.NoError(t, srv.setAddress(fmt.Sprintf("127.0.0.1:%d", envPort))) // what Serve would record
	return e
}

// envPort is the port an env's server says it listens on (it binds
// nothing): one no default could be, so an answer naming it can only
// come from the recorded address.
const envPort = 39092

// req returns the per-request context a connection would build.
func (e *env) req(clientID string, version int16) *request {
	const remote = "127.0.0.1:40000"
	return &request{ctx: e.t.Context(), logger: connLogger(e.srv.logger, remote), clientID: clientID, peer: &peer{remote: remote, host: "/127.0.0.1"}, version: version}
}

// serve runs Serve on a loopback listener and returns its address. Cleanup
// cancels the context and fails the test unless Serve returns in time.
func (e *env) serve() string {
	e.t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(e.t, err)
	return e.serveOn(ln)
}

// serveOn is serve on a listener the test built.
func (e *env) serveOn(ln net.Listener) string {
	e.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.srv.Serve(ctx, ln) }()
	e.t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				e.t.Errorf("Serve: %v", err)
			}
		case <-time.After(testTimeout):
			e.t.Errorf("Serve did not return %v after cancel", testTimeout)
		}
	})
	return ln.Addr().String()
}

// join joins member (empty: a new id) to group with a v3 JoinGroup, which
// joins at once, and requires success.
func (e *env) join(clientID, group, member string, topics ...string) *kmsg.JoinGroupResponse {
	e.t.Helper()
	resp := e.srv.handleJoinGroup(e.req(clientID, 3), joinRequest(3, group, member, topics...)).(*kmsg.JoinGroupResponse)
	require.Zero(e.t, resp.ErrorCode, "join %s/%s", group, member)
	return resp
}

// joinRequest is wiretest.JoinRequest with the fixture joins' session
// timeout.
func joinRequest(version int16, group, member string, topics ...string) *kmsg.JoinGroupRequest {
	return wiretest.JoinRequest(version, group, member, testSession, topics...)
}

func isReset(err error) bool {
	return err != nil && strings.Contains(err.Error(), "connection reset")
}

// rawRequest formats req with corr and clientID, size prefix included.
func rawRequest(req kmsg.Request, corr int32, clientID string) []byte {
	return kmsg.NewRequestFormatter(kmsg.FormatterClientID(clientID)).AppendRequest(nil, req, corr)
}

// rawHeader encodes a request header v1 by hand, size prefix included,
// followed by body.
func rawHeader(key, version int16, corr int32, body []byte) []byte {
	b := kbin.AppendInt16(nil, key)
	b = kbin.AppendInt16(b, version)
	b = kbin.AppendInt32(b, corr)
	b = kbin.AppendNullableString(b, nil)
	b = append(b, body...)
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(b))), b...)
}

// apiVersionsRequest is an ApiVersions request at version with a valid
// client software name and version.
func apiVersionsRequest(version int16) *kmsg.ApiVersionsRequest {
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = version
	req.ClientSoftwareName, req.ClientSoftwareVersion = "server-test", "1.0"
	return req
}

// eventually polls cond until it holds or deadline passes
// (testutil.Eventually).
func eventually(t *testing.T, deadline time.Duration, cond func() bool, msg string) {
	t.Helper()
	testutil.Eventually(t, deadline, testutil.Holds(cond, msg))
}

// call dispatches req to its handler as a connection would, with clientID
// in the header, and returns the typed response.
func call[R kmsg.Response](e *env, clientID string, req kmsg.Request) R {
	e.t.Helper()
	return e.srv.handlers[kmsg.Key(req.Key())].handle(e.srv, e.req(clientID, req.GetVersion()), req).(R)
}

// dialTLS opens a raw client over TLS to addr, trusting pki's CA and,
// with withCert, presenting its client certificate; cleanup closes it.
func dialTLS(t *testing.T, addr string, pki *testutil.PKI, withCert bool) (*wireclient.Client, error) {
	t.Helper()
	cfg := pki.ClientConfig(withCert)
	d := tls.Dialer{Config: cfg, NetDialer: &net.Dialer{Timeout: testTimeout}}
	conn, err := d.DialContext(t.Context(), "tcp", addr)
	if err != nil {
		return nil, err
	}
	c := wireclient.NewClient(conn, "tls")
	t.Cleanup(func() { c.Close() })
	return c, nil
}

// consumerHeartbeatRequest is a full ConsumerGroupHeartbeat as kgo sends
// it: the rebalance timeout, the "uniform" assignor, the subscription and
// an empty owned-partition list (so that a join is valid).
func consumerHeartbeatRequest(version int16, group, member string, epoch int32, topics ...string) *kmsg.ConsumerGroupHeartbeatRequest {
	req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	req.Version, req.Group, req.MemberID, req.MemberEpoch = version, group, member, epoch
	req.RebalanceTimeoutMillis = 60000
	req.ServerAssignor = kmsg.StringPtr("uniform")
	req.SubscribedTopicNames = append([]string{}, topics...)
	req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	return req
}

// consumerJoin joins member to consumer group with a v1 heartbeat; it must
// succeed.
func (e *env) consumerJoin(group, member string, topics ...string) *kmsg.ConsumerGroupHeartbeatResponse {
	e.t.Helper()
	resp := call[*kmsg.ConsumerGroupHeartbeatResponse](e, "kgo", consumerHeartbeatRequest(1, group, member, 0, topics...))
	require.Zero(e.t, resp.ErrorCode, "join %s/%s", group, member)
	return resp
}

// serveBench serves srv on a loopback listener until the benchmark ends.
func serveBench(b *testing.B, srv *Server) string {
	b.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(b, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	b.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(testTimeout):
			b.Errorf("Serve did not return %v after cancel", testTimeout)
		}
	})
	return ln.Addr().String()
}

// benchServer serves a Server over an in-memory log holding topic
// "bench" with partitions partitions, on a loopback socket, for
// benchmarks of the connection and the records handlers without a disk.
func benchServer(b *testing.B, partitions int32) (addr string, log *records.Log) {
	b.Helper()
	core := coretest.New(b, coretest.Config{Topics: map[string]int32{"bench": partitions}})
	log = core.Log
	srv, err := New(Config{Coordinator: core.Coordinator, Catalog: core.Catalog, Log: log})
	require.NoError(b, err)
	return serveBench(b, srv), log
}

// benchBatch is an uncompressed batch of 100-byte records, about size
// bytes, timestamped now.
func benchBatch(size int) []byte {
	spec := records.BatchSpec{FirstTimestamp: time.Now().UnixMilli()}
	for i := range size / 110 {
		v := make([]byte, 100)
		for j := range v {
			v[j] = byte('a' + (i+j)%26)
		}
		spec.Records = append(spec.Records, records.Record{Value: v})
	}
	return records.EncodeBatch(spec)
}

// staticJoinRequest is joinRequest with a group instance id (v5+).
func staticJoinRequest(version int16, group, member, instance string, topics ...string) *kmsg.JoinGroupRequest {
	req := joinRequest(version, group, member, topics...)
	req.InstanceID = &instance
	return req
}

// staticRestart joins instance "a" to group over orders, then joins it
// again as a restarted process does: it returns the member id of the first
// run (now fenced) and that of the second, both at generation 1.
func (e *env) staticRestart(group string) (old, current string) {
	e.t.Helper()
	first := call[*kmsg.JoinGroupResponse](e, "kgo", staticJoinRequest(9, group, "", "a", "orders"))
	require.Zero(e.t, first.ErrorCode)
	second := call[*kmsg.JoinGroupResponse](e, "kgo", staticJoinRequest(9, group, "", "a", "orders"))
	require.Zero(e.t, second.ErrorCode)
	require.Equal(e.t, int32(1), second.Generation)
	return first.MemberID, second.MemberID
}
