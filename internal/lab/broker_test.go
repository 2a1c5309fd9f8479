package lab

import (
	"encoding/binary"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/clock"
	"github.com/minibroker/minibroker/protocol"
)

// TestLabBrokerOffsetsSurviveRestart commits over the wire, stops the broker,
// starts another on the same data directory and fetches the offsets back:
// an acknowledged commit is durable, and groups are not (a restart empties
// them, as a coordinator failover would).
func TestLabBrokerOffsetsSurviveRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ctx := testContext(t)

	b, err := StartBroker(BrokerConfig{DataDir: dir})
	require.NoError(t, err)
	m, err := Dial(ctx, b.Addr, MemberConfig{Group: "durable", Topics: []string{"orders"}})
	require.NoError(t, err)
	require.NoError(t, joinAndSync(ctx, m))
	codes, err := m.Commit(ctx, m.Generation, PartitionOffset{TP("orders", 0), 6}, PartitionOffset{TP("orders", 3), 9})
	require.NoError(t, err)
	code, ok := OneCode(codes)
	require.True(t, ok)
	require.Equal(t, int16(0), code)
	require.NoError(t, m.Close())
	require.NoError(t, b.Close())
	require.DirExists(t, dir, "a data dir the caller chose is kept")

	b, err = StartBroker(BrokerConfig{DataDir: dir})
	require.NoError(t, err)
	t.Cleanup(func() { b.Close() })
	m, err = Dial(ctx, b.Addr, MemberConfig{Group: "durable"})
	require.NoError(t, err)
	t.Cleanup(func() { m.Close() })
	code, got, err := m.Fetch(ctx, TP("orders", 0), TP("orders", 1), TP("orders", 3))
	require.NoError(t, err)
	require.Equal(t, int16(0), code)
	require.Equal(t, []PartitionOffset{{TP("orders", 0), 6}, {TP("orders", 1), -1}, {TP("orders", 3), 9}}, got)

	_, state, members, err := m.Describe(ctx)
	require.NoError(t, err)
	require.Equal(t, "Empty", state, "the group is known only by its offsets after a restart")
	require.Empty(t, members)
	hb, err := m.HeartbeatAs(ctx, "lab-000001", 1)
	require.NoError(t, err)
	require.Equal(t, kerr.UnknownMemberID.Code, hb, "no member survives a restart")
}

func TestLabBrokerCloseIsIdempotentAndRemovesTempDir(t *testing.T) {
	t.Parallel()
	b, err := StartBroker(BrokerConfig{})
	require.NoError(t, err)
	require.NotNil(t, b.Clock, "the default clock is manual")
	require.Equal(t, time.UnixMilli(0), b.Clock.Now())
	dir := b.tmpDir
	require.DirExists(t, dir)
	done := make(chan error, 2)
	for range 2 {
		go func() { done <- b.Close() }()
	}
	require.NoError(t, <-done)
	require.NoError(t, <-done)
	require.NoError(t, b.Close())
	require.NoDirExists(t, dir)

	real, err := StartBroker(BrokerConfig{Clock: clock.System{}, ExpiryInterval: time.Millisecond})
	require.NoError(t, err)
	require.Nil(t, real.Clock, "Clock is set only for a manual clock")
	require.NoError(t, real.Close())
}

// TestLabBrokerClosesBadConnections sends what Kafka's SocketServer answers by
// closing the connection: a frame over the size cap, a negative size, an
// unknown API key, a truncated request. Each closes only its own
// connection: a fresh one is served as before.
func TestLabBrokerClosesBadConnections(t *testing.T) {
	t.Parallel()
	b, err := StartBroker(BrokerConfig{})
	require.NoError(t, err)
	t.Cleanup(func() { b.Close() })
	ctx := testContext(t)

	header := func(key, version int16) []byte { // header v1, null client id
		h := binary.BigEndian.AppendUint16(nil, uint16(key))
		h = binary.BigEndian.AppendUint16(h, uint16(version))
		h = binary.BigEndian.AppendUint32(h, 7)
		return binary.BigEndian.AppendUint16(h, 0xffff)
	}
	frame := func(body []byte) []byte {
		return append(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body...)
	}
	cases := map[string][]byte{
		"frame over the cap": binary.BigEndian.AppendUint32(nil, uint32(protocol.DefaultMaxFrameBytes+1)),
		"negative size":      {0xff, 0xff, 0xff, 0xff},
		"unknown API key":    frame(header(9999, 0)),
		"truncated request":  frame(append(header(int16(kmsg.Heartbeat), 4), 0x05, 'g')),
	}
	for name, raw := range cases {
		conn, err := protocol.Dial(ctx, b.Addr, "hostile")
		require.NoError(t, err)
		require.NoError(t, conn.Send(raw), name)
		require.NoError(t, conn.SetDeadline(time.Now().Add(5*time.Second)))
		_, err = conn.ReadFrame()
		require.ErrorIs(t, err, io.EOF, "%s: the broker must close the connection", name)
		conn.Close()
	}
	m, err := Dial(ctx, b.Addr, MemberConfig{Group: "after", Topics: []string{"orders"}})
	require.NoError(t, err)
	t.Cleanup(func() { m.Close() })
	require.NoError(t, joinAndSync(ctx, m), "other connections are served as before")
}

// TestLabBrokerAdvertisesTheVersionTable checks over the wire that
// ApiVersions lists exactly protocol's version table: no Produce, no
// ConsumerGroupHeartbeat.
func TestLabBrokerAdvertisesTheVersionTable(t *testing.T) {
	t.Parallel()
	b, err := StartBroker(BrokerConfig{})
	require.NoError(t, err)
	t.Cleanup(func() { b.Close() })
	ctx := testContext(t)
	conn, err := protocol.Dial(ctx, b.Addr, "versions")
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = 3
	req.ClientSoftwareName, req.ClientSoftwareVersion = "lab", "1.0"
	resp, err := Request[*kmsg.ApiVersionsResponse](ctx, conn, req)
	require.NoError(t, err)
	require.Equal(t, int16(0), resp.ErrorCode)
	var got []protocol.VersionRange
	for _, k := range resp.ApiKeys {
		got = append(got, protocol.VersionRange{Key: k.ApiKey, Min: k.MinVersion, Max: k.MaxVersion})
	}
	require.Equal(t, protocol.SupportedVersions(), got)
}
