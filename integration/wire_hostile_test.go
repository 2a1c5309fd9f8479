package integration

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/broker"
	"github.com/minibroker/minibroker/protocol"
	"github.com/minibroker/minibroker/testkit/wiretest"
)

// hostileFrameCap is the broker's --max-frame-bytes in these tests.
const hostileFrameCap = 4096

// sized prefixes frame with its int32 size.
func sized(frame []byte) []byte {
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(frame))), frame...)
}

// header encodes a request header v1 (null client id).
func header(key, version int16, corr int32) []byte {
	b := kbin.AppendInt16(nil, key)
	b = kbin.AppendInt16(b, version)
	b = kbin.AppendInt32(b, corr)
	return kbin.AppendNullableString(b, nil)
}

func formatted(req kmsg.Request, corr int32) []byte {
	return kmsg.NewRequestFormatter(kmsg.FormatterClientID("hostile")).AppendRequest(nil, req, corr)
}

// TestWireHostileInputClosesOnlyItsConnection: each bad input closes its
// own connection without an answer (the peer sees EOF), while a client
// that was connected before keeps getting correct answers before and
// after.
func TestWireHostileInputClosesOnlyItsConnection(t *testing.T) {
	t.Parallel()
	hb := formatted(wiretest.HeartbeatRequest(3, "g", "m", 1), 1)
	truncatedBody := sized(hb[4 : len(hb)-3]) // the frame is whole, the body inside is short
	joinFrame := formatted(joinRequest(5, "g", "", "orders"), 1)
	truncatedJoin := sized(joinFrame[4 : len(joinFrame)-10])

	tests := []struct {
		name string
		raw  []byte
	}{
		// Over the cap, an API other than Produce closes once its header
		// is read (a Produce is skimmed and answered: wire_oversize_test.go).
		{"oversize frame", append(binary.BigEndian.AppendUint32(nil, hostileFrameCap+1), header(12, 4, 1)...)},
		{"huge frame", []byte{0x7f, 0xff, 0xff, 0xff}},
		{"negative frame size", []byte{0xff, 0xff, 0xff, 0xfe}},
		{"unknown API key 9999", sized(header(9999, 0, 1))},
		{"unknown API key -1", sized(header(-1, 0, 1))},
		{"truncated header", sized([]byte{0, 12, 0, 3, 0})},
		{"truncated client id", sized(append(kbin.AppendInt32(kbin.AppendInt16(kbin.AppendInt16(nil, 12), 3), 1), 0, 9, 'a'))},
		{"truncated Heartbeat body", truncatedBody},
		{"truncated JoinGroup body", truncatedJoin},
		{"empty body", sized(header(11, 5, 1))},
		{"Heartbeat v99", sized(append(header(12, 99, 1), hb[14:]...))},
		{"flexible header without tags", sized(header(12, 4, 1))},
	}
	b := startBroker(t, func(cfg *broker.Config) { cfg.MaxFrameBytes = hostileFrameCap })
	setup := wiretest.Dial(t, b.Addr(), "setup")
	member := join(t, setup, "g", "orders")

	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			bystander := wiretest.Dial(t, b.Addr(), "bystander")
			check := func(when string) {
				assert.Equal(t, codeNone, heartbeat(t, bystander, "g", member.MemberID, member.Generation), when)
				md := wiretest.Do[*kmsg.MetadataResponse](t, bystander, metadataRequest(12, []string{"payments"}))
				assert.Equal(t, []string{"payments:0:1"}, metadataTopics(md), when)
			}
			check("before")

			c := wiretest.Dial(t, b.Addr(), "hostile")
			require.NoError(t, c.Send(tc.raw))
			wiretest.RequireClosed(t, c)

			check("after")
		})
	}
}

// TestWireFrameAtTheCapIsServed: a frame of exactly --max-frame-bytes is
// read and answered; the cap is inclusive.
func TestWireFrameAtTheCapIsServed(t *testing.T) {
	t.Parallel()
	b := startBroker(t, func(cfg *broker.Config) { cfg.MaxFrameBytes = hostileFrameCap })
	c := wiretest.Dial(t, b.Addr(), "c")
	frame := header(18, 0, 7) // ApiVersions v0 has an empty body; trailing bytes are ignored
	frame = append(frame, bytes.Repeat([]byte{0}, hostileFrameCap-len(frame))...)
	require.NoError(t, c.Send(sized(frame)))
	require.NoError(t, c.SetDeadline(deadline()))
	resp, err := c.ReadFrame()
	require.NoError(t, err)
	assert.Equal(t, int32(7), int32(binary.BigEndian.Uint32(resp)))
	assert.Equal(t, []byte{0, 0}, resp[4:6], "error code NONE")
}

// TestWireApiVersionsV99KeepsConnection: the one unsupported version that
// is answered: a v0 error body (UNSUPPORTED_VERSION, ApiKeys=[{18,0,4}])
// on a v0 response header, and the same connection answers v3 normally.
func TestWireApiVersionsV99KeepsConnection(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	c := wiretest.Dial(t, b.Addr(), "c")
	// A v99 body we could not parse, as a future client might send.
	require.NoError(t, c.Send(sized(append(header(18, 99, 42), 0xde, 0xad))))
	require.NoError(t, c.SetDeadline(deadline()))
	frame, err := c.ReadFrame()
	require.NoError(t, err)
	want := kbin.AppendInt32(nil, 42)                     // correlation id; header v0, no tags
	want = kbin.AppendInt16(want, codeUnsupportedVersion) // error code
	want = kbin.AppendInt32(want, 1)                      // one ApiKeys entry
	want = append(want, 0, 18, 0, 0, 0, 4)                // ApiVersions 0-4
	assert.Equal(t, want, frame)

	resp := wiretest.Do[*kmsg.ApiVersionsResponse](t, c, apiVersionsRequest(3))
	assert.Equal(t, codeNone, resp.ErrorCode)
	assert.Len(t, resp.ApiKeys, len(protocol.SupportedVersions()))
}
