package broker

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/catalog"
	"github.com/minibroker/minibroker/coordinator"
	"github.com/minibroker/minibroker/internal/datadir"
	"github.com/minibroker/minibroker/internal/testutil"
	"github.com/minibroker/minibroker/testkit/wiretest"
	"github.com/minibroker/minibroker/wireclient"
)

// waitTimeout bounds every network wait of these tests.
const waitTimeout = 10 * time.Second

func start(t *testing.T, cfg Config) *Broker {
	t.Helper()
	b, err := Start(t.Context(), cfg)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, b.Close()) })
	return b
}

// join makes a v3 consumer join (one round trip) subscribed to topics.
func join(t *testing.T, c *wireclient.Client, group string, topics ...string) *kmsg.JoinGroupResponse {
	t.Helper()
	resp := wiretest.Do[*kmsg.JoinGroupResponse](t, c, wiretest.JoinRequest(3, group, "", 30*time.Second, topics...))
	require.Zero(t, resp.ErrorCode)
	return resp
}

func heartbeat(t *testing.T, c *wireclient.Client, group, member string, generation int32) int16 {
	t.Helper()
	return wiretest.Do[*kmsg.HeartbeatResponse](t, c, wiretest.HeartbeatRequest(4, group, member, generation)).ErrorCode
}

func commit(t *testing.T, c *wireclient.Client, group, member string, generation int32, partition int32, offset int64) int16 {
	t.Helper()
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Version, req.Group, req.MemberID, req.Generation = 8, group, member, generation
	req.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "orders", Partitions: []kmsg.OffsetCommitRequestTopicPartition{
		{Partition: partition, Offset: offset, LeaderEpoch: -1},
	}}}
	return wiretest.Do[*kmsg.OffsetCommitResponse](t, c, req).Topics[0].Partitions[0].ErrorCode
}

func fetchOffset(t *testing.T, c *wireclient.Client, group string, partition int32) int64 {
	t.Helper()
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Version, req.Group = 7, group
	req.Topics = []kmsg.OffsetFetchRequestTopic{{Topic: "orders", Partitions: []int32{partition}}}
	return wiretest.Do[*kmsg.OffsetFetchResponse](t, c, req).Topics[0].Partitions[0].Offset
}

// TestStartInMemoryDefaults: an empty config serves on 127.0.0.1, keeps
// nothing on disk and runs on the system clock.
func TestStartInMemoryDefaults(t *testing.T) {
	t.Parallel()
	b := start(t, Config{Topics: map[string]int32{"orders": 4}})
	host, _, err := net.SplitHostPort(b.Addr())
	require.NoError(t, err)
	require.Equal(t, "127.0.0.1", host)
	require.Empty(t, b.DataDir())
	require.Empty(t, b.AdminAddr())
	require.Empty(t, b.Catalog().Path(), "the catalog is in memory")
	_, err = b.Advance(time.Second)
	require.ErrorIs(t, err, ErrRealClock)

	c := wiretest.Dial(t, b.Addr(), "test")
	j := join(t, c, "g", "orders")
	require.Zero(t, commit(t, c, "g", j.MemberID, j.Generation, 2, 42))
	require.Equal(t, int64(42), fetchOffset(t, c, "g", 2))
}

// TestReplayedCommitAfterExpireMember is what the README says where it
// fences a member: once the group's only member is expired, the group is
// Empty and a commit replayed with the member's id and generation is
// REBALANCE_IN_PROGRESS (matrix row commit-not-stable); with another
// member left, the group is Stable at a newer generation and the same
// replay is ILLEGAL_GENERATION. Neither is stored.
func TestReplayedCommitAfterExpireMember(t *testing.T) {
	t.Parallel()
	b := start(t, Config{ManualClock: true, Topics: map[string]int32{"orders": 4}})
	c := wiretest.Dial(t, b.Addr(), "test")
	only := join(t, c, "alone", "orders")
	require.NoError(t, b.ExpireMember("alone", only.MemberID))
	require.Equal(t, kerr.RebalanceInProgress.Code, commit(t, c, "alone", only.MemberID, only.Generation, 0, 5))
	require.Empty(t, b.Committed("alone"))

	first := join(t, c, "pair", "orders")
	second := join(t, c, "pair", "orders")
	require.NoError(t, b.ExpireMember("pair", first.MemberID))
	require.Equal(t, kerr.IllegalGeneration.Code, commit(t, c, "pair", first.MemberID, second.Generation, 0, 5))
	require.Empty(t, b.Committed("pair"))
}

// TestCommittedReadsTheStore: Committed answers what the group's
// acknowledged commits stored, sorted, with their metadata; a refused
// commit adds nothing, and a group that never committed has none.
func TestCommittedReadsTheStore(t *testing.T) {
	t.Parallel()
	b := start(t, Config{ManualClock: true, Topics: map[string]int32{"orders": 4}})
	require.Empty(t, b.Committed("g"))
	c := wiretest.Dial(t, b.Addr(), "test")
	j := join(t, c, "g", "orders")
	require.Zero(t, commit(t, c, "g", j.MemberID, j.Generation, 3, 9))
	require.Zero(t, commit(t, c, "g", j.MemberID, j.Generation, 1, 4))
	require.Equal(t, kerr.IllegalGeneration.Code, commit(t, c, "g", j.MemberID, j.Generation+1, 0, 7))
	got := b.Committed("g")
	require.Len(t, got, 2)
	for i, want := range []struct {
		partition int32
		offset    int64
	}{{1, 4}, {3, 9}} {
		require.Equal(t, "orders", got[i].Topic)
		require.Equal(t, want.partition, got[i].Partition)
		require.Equal(t, want.offset, got[i].Offset)
		require.Equal(t, int64(0), got[i].CommitTimestampMs, "the manual clock reads 0")
	}
	require.Empty(t, b.Committed("other"))
}

// TestDataDirSurvivesRestart: topics created at start and over the wire,
// and acknowledged commits, are there after a restart on the same data
// dir; members are not (a restart empties groups, as a failover would).
func TestDataDirSurvivesRestart(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "data")
	b, err := Start(t.Context(), Config{DataDir: dir, Topics: map[string]int32{"orders": 4}})
	require.NoError(t, err)
	require.NoError(t, b.CreateTopic("invoices", 2, nil))
	c := wiretest.Dial(t, b.Addr(), "test")
	j := join(t, c, "g", "orders")
	require.Zero(t, commit(t, c, "g", j.MemberID, j.Generation, 3, 9))
	ordersID := mustTopic(t, b, "orders").ID
	require.NoError(t, b.Close())
	require.NoError(t, b.Close(), "Close is idempotent")
	require.FileExists(t, filepath.Join(dir, "offsets.json"))

	b = start(t, Config{DataDir: dir, Topics: map[string]int32{"orders": 8}})
	require.Equal(t, map[string]int32{"orders": 4, "invoices": 2}, b.Catalog().Counts(), "an existing topic keeps its count")
	require.Equal(t, ordersID, mustTopic(t, b, "orders").ID, "topic ids survive a restart")
	c = wiretest.Dial(t, b.Addr(), "test")
	require.Equal(t, int64(9), fetchOffset(t, c, "g", 3))
	require.Equal(t, kerr.UnknownMemberID.Code, heartbeat(t, c, "g", j.MemberID, j.Generation))
}

func mustTopic(t *testing.T, b *Broker, name string) catalog.Topic {
	t.Helper()
	tp, ok := b.Catalog().Lookup(name)
	require.True(t, ok, name)
	return tp
}

// TestManualClockFencesOnDemand: the controls of an embedded broker on a
// manual clock. A live member is fenced by ExpireMember; time moves only by
// Advance and members expire only when Expire runs.
func TestManualClockFencesOnDemand(t *testing.T) {
	t.Parallel()
	b := start(t, Config{ManualClock: true, Topics: map[string]int32{"orders": 4}, GroupSettings: GroupSettings{MinSessionTimeout: time.Millisecond}})
	require.Equal(t, time.UnixMilli(0), b.Now())
	c := wiretest.Dial(t, b.Addr(), "test")
	a := join(t, c, "g", "orders")
	other := join(t, c, "g", "orders")
	require.Equal(t, int32(2), other.Generation)
	require.Equal(t, kerr.IllegalGeneration.Code, heartbeat(t, c, "g", a.MemberID, a.Generation))
	require.Zero(t, heartbeat(t, c, "g", a.MemberID, 2))

	require.NoError(t, b.ExpireMember("g", a.MemberID))
	require.Equal(t, kerr.IllegalGeneration.Code, heartbeat(t, c, "g", a.MemberID, 2), "fenced at its next heartbeat")
	require.Equal(t, kerr.UnknownMemberID.Code, heartbeat(t, c, "g", a.MemberID, 3))
	require.ErrorIs(t, b.ExpireMember("g", a.MemberID), coordinator.ErrUnknownMemberID)

	require.NoError(t, b.ForceRebalance("g"))
	require.EqualError(t, b.ForceRebalance("nogroup"), `unknown group "nogroup"`)
	require.ErrorIs(t, b.ForceRebalance("nogroup"), coordinator.ErrUnknownGroup)
	require.Equal(t, kerr.IllegalGeneration.Code, heartbeat(t, c, "g", other.MemberID, 3))
	require.Zero(t, heartbeat(t, c, "g", other.MemberID, 4))

	require.Empty(t, b.Expire(), "nothing expires before the clock passes a deadline")
	now, err := b.Advance(30*time.Second + time.Millisecond)
	require.NoError(t, err)
	require.Equal(t, time.UnixMilli(30_001), now)
	require.Equal(t, []coordinator.Expired{{Group: "g", MemberID: other.MemberID}}, b.Expire())
}

// TestStartFailuresLeaveNothingBehind: a start that fails (bad config, an
// address in use, a corrupt data dir) returns an error and leaves no
// listener open.
func TestStartFailuresLeaveNothingBehind(t *testing.T) {
	t.Parallel()
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { taken.Close() })
	corrupt := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(corrupt, "offsets.json"), []byte("{"), 0o644))

	cases := []struct {
		name string
		cfg  Config
		want string
	}{
		{"invalid config", Config{Advertise: "nohost"}, "Advertise must be HOST:PORT"}, // the rest in TestConfigValidate
		{"listen taken", Config{Listen: taken.Addr().String()}, "address already in use"},
		{"admin taken", Config{Admin: taken.Addr().String(), AdminAPI: stubAdmin}, "broker: Admin " + taken.Addr().String()},
		{"corrupt offsets", Config{DataDir: corrupt}, "corrupt offsets file"},
		{"bad topic name", Config{Topics: map[string]int32{"a b": 1}}, "invalid topic name"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b, err := Start(t.Context(), tc.cfg)
			require.ErrorContains(t, err, tc.want)
			require.Nil(t, b)
		})
	}
}

// TestContextStopsTheBroker: the broker stops when its Start context is
// done, and Wait reports that it stopped cleanly.
func TestContextStopsTheBroker(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	b, err := Start(ctx, Config{})
	require.NoError(t, err)
	cancel()
	require.NoError(t, b.Wait())
	_, err = net.DialTimeout("tcp", b.Addr(), waitTimeout)
	require.Error(t, err, "the listener is closed")
	require.NoError(t, b.Close())
}

// TestCloseClosesConnections: Close closes every client connection.
func TestCloseClosesConnections(t *testing.T) {
	t.Parallel()
	b, err := Start(t.Context(), Config{})
	require.NoError(t, err)
	c := wiretest.Dial(t, b.Addr(), "test")
	wiretest.Do[*kmsg.ApiVersionsResponse](t, c, kmsg.NewPtrApiVersionsRequest())
	require.NoError(t, b.Close())
	require.NoError(t, c.SetDeadline(time.Now().Add(waitTimeout)))
	_, err = c.ReadFrame()
	require.True(t, errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) || errors.Is(err, io.ErrUnexpectedEOF), "got %v", err)
}
func TestPlaintextExposed(t *testing.T) {
	t.Parallel()
	tcp := func(ip string) net.Addr { return &net.TCPAddr{IP: net.ParseIP(ip), Port: 9092} }
	cases := []struct {
		name string
		addr net.Addr
		want bool
	}{
		{"IPv4 loopback", tcp("127.0.0.1"), false},
		{"other IPv4 loopback", tcp("127.1.2.3"), false},
		{"IPv6 loopback", tcp("::1"), false},
		{"all IPv4 interfaces", tcp("0.0.0.0"), true},
		{"all interfaces", tcp("::"), true},
		{"private address", tcp("10.1.2.3"), true},
		{"public address", tcp("192.0.2.7"), true},
		{"not TCP", &net.UnixAddr{Name: "/tmp/sock", Net: "unix"}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.want, plaintextExposed(tc.addr))
		})
	}
}

// TestListenOnAllInterfaces: a broker bound to every interface logs a
// warning naming the bound and the advertised address; Addr is
// 127.0.0.1 with the bound port, which Metadata advertises too unless
// Advertise is set. A loopback broker logs no such warning. (The test
// binds every interface on a port of the kernel's choice, for a moment:
// that is the behaviour under test.)
func TestListenOnAllInterfaces(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, listen, advertise string
		warn                    bool
	}{
		{"0.0.0.0", "0.0.0.0:0", "", true},
		{"empty host", ":0", "", true},
		{"advertised", "0.0.0.0:0", "kafka.example:9092", true},
		{"loopback", "127.0.0.1:0", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			logs := testutil.NewLogRecorder(nil, nil)
			b := start(t, Config{Listen: tc.listen, Advertise: tc.advertise, Logger: logs.Logger()})
			host, port, err := net.SplitHostPort(b.Addr())
			require.NoError(t, err)
			require.Equal(t, "127.0.0.1", host)
			c := wiretest.Dial(t, b.Addr(), "test")
			meta := wiretest.Do[*kmsg.MetadataResponse](t, c, kmsg.NewPtrMetadataRequest())
			require.Len(t, meta.Brokers, 1)
			wantHost, wantPort := "127.0.0.1", port
			if tc.advertise != "" {
				wantHost, wantPort, _ = net.SplitHostPort(tc.advertise)
			}
			require.Equal(t, wantHost, meta.Brokers[0].Host)
			require.Equal(t, wantPort, fmt.Sprint(meta.Brokers[0].Port))

			warned := logs.Find("listening on all interfaces")
			if !tc.warn {
				require.Empty(t, warned)
				return
			}
			require.Len(t, warned, 1)
			require.Equal(t, slog.LevelWarn, warned[0].Level)
			bound, boundPort, err := net.SplitHostPort(warned[0].Attrs["addr"])
			require.NoError(t, err)
			require.True(t, net.ParseIP(bound).IsUnspecified(), bound)
			require.Equal(t, port, boundPort)
			require.Equal(t, cmp.Or(tc.advertise, b.Addr()), warned[0].Attrs["advertise"])
		})
	}
}

// TestOneBrokerPerDataDir: a second broker on a data dir in use refuses to
// start, naming the directory and the holder, and touches nothing; once
// the first has stopped, the directory is free.
func TestOneBrokerPerDataDir(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	first, err := Start(t.Context(), Config{DataDir: dir, Topics: map[string]int32{"orders": 4}})
	require.NoError(t, err)
	c := wiretest.Dial(t, first.Addr(), "test")
	j := join(t, c, "g", "orders")
	require.Zero(t, commit(t, c, "g", j.MemberID, j.Generation, 1, 5))
	before := readDir(t, dir)

	second, err := Start(t.Context(), Config{DataDir: dir, Topics: map[string]int32{"invoices": 1}})
	require.ErrorIs(t, err, datadir.ErrInUse)
	require.ErrorContains(t, err, dir)
	require.ErrorContains(t, err, fmt.Sprintf("pid %d", os.Getpid()))
	require.Nil(t, second)
	require.Equal(t, before, readDir(t, dir), "the refused broker changed nothing")
	require.Zero(t, commit(t, c, "g", j.MemberID, j.Generation, 1, 6), "the first broker serves on")

	require.NoError(t, first.Close())
	again := start(t, Config{DataDir: dir})
	require.Equal(t, int64(6), fetchOffset(t, wiretest.Dial(t, again.Addr(), "test"), "g", 1))
}

// readDir returns every file under dir with its contents, by path.
func readDir(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	require.NoError(t, filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		out[path] = string(data)
		return err
	}))
	return out
}

// TestStartOnATakenAddressMakesNothing: a listener address another
// process holds stops the start before the data dir is made, with a
// ListenError naming the Config field and wrapping EADDRINUSE.
func TestStartOnATakenAddressMakesNothing(t *testing.T) {
	t.Parallel()
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { taken.Close() })
	for _, tc := range []struct {
		field string
		cfg   Config
	}{
		{"Listen", Config{Listen: taken.Addr().String()}},
		{"Admin", Config{Admin: taken.Addr().String(), AdminAPI: stubAdmin}},
	} {
		t.Run(tc.field, func(t *testing.T) {
			t.Parallel()
			dir := filepath.Join(t.TempDir(), "data")
			tc.cfg.DataDir = dir
			b, err := Start(t.Context(), tc.cfg)
			require.Nil(t, b)
			var le *ListenError
			require.ErrorAs(t, err, &le)
			require.Equal(t, tc.field, le.Field)
			require.Equal(t, taken.Addr().String(), le.Addr)
			require.ErrorIs(t, err, syscall.EADDRINUSE)
			require.Equal(t, "broker: "+tc.field+" "+taken.Addr().String()+": listen tcp "+taken.Addr().String()+": bind: address already in use", err.Error())
			require.NoDirExists(t, dir)
		})
	}
}
