package protocol

import (
	"bytes"
	"errors"
	"reflect"
	"testing"

	"github.com/minibroker/minibroker/testkit/frametest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestParseHeader(t *testing.T) {
	t.Parallel()
	// Header v2 tags: one tag (key 5, 3 bytes), then the body.
	tags := []byte{1, 5, 3, 'x', 'y', 'z'}
	tests := []struct {
		name     string
		frame    []byte
		want     RequestHeader
		wantRest []byte
	}{
		{
			name:     "header v1",
			frame:    frametest.HeaderBytes(12, 3, 42, ptr("client-1"), []byte("body")),
			want:     RequestHeader{APIKey: 12, APIVersion: 3, CorrelationID: 42, ClientID: ptr("client-1")},
			wantRest: []byte("body"),
		},
		{
			name:     "header v2 keeps int16 client id length and leaves tags",
			frame:    frametest.HeaderBytes(12, 4, -7, ptr("c"), append(tags, "body"...)),
			want:     RequestHeader{APIKey: 12, APIVersion: 4, CorrelationID: -7, ClientID: ptr("c")},
			wantRest: append(tags, "body"...),
		},
		{
			name:     "null client id",
			frame:    frametest.HeaderBytes(18, 0, 1, nil, nil),
			want:     RequestHeader{APIKey: 18, APIVersion: 0, CorrelationID: 1},
			wantRest: []byte{},
		},
		{
			name:     "empty client id",
			frame:    frametest.HeaderBytes(18, 0, 1, ptr(""), nil),
			want:     RequestHeader{APIKey: 18, APIVersion: 0, CorrelationID: 1, ClientID: ptr("")},
			wantRest: []byte{},
		},
		{
			name:     "unknown key still parses",
			frame:    frametest.HeaderBytes(9999, 99, 3, ptr("x"), nil),
			want:     RequestHeader{APIKey: 9999, APIVersion: 99, CorrelationID: 3, ClientID: ptr("x")},
			wantRest: []byte{},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h, rest, err := ParseHeader(tc.frame)
			require.NoError(t, err)
			assert.Equal(t, tc.want, h)
			assert.Equal(t, tc.wantRest, rest)
		})
	}
}

// TestParseHeaderReusing: a header naming the last client id gets that
// very string (nothing allocated for it); any other (another id, a prefix of
// it, a longer one, null, the empty one) is parsed as ParseHeader parses
// it, and a truncated client id is still malformed.
func TestParseHeaderReusing(t *testing.T) {
	t.Parallel()
	last := ptr("client-1")
	frame := frametest.HeaderBytes(12, 3, 42, ptr("client-1"), []byte("body"))
	h, rest, err := ParseHeaderReusing(frame, last)
	require.NoError(t, err)
	assert.Same(t, last, h.ClientID)
	assert.Equal(t, RequestHeader{APIKey: 12, APIVersion: 3, CorrelationID: 42, ClientID: last}, h)
	assert.Equal(t, []byte("body"), rest)

	for _, id := range []*string{ptr("client-2"), ptr("client-"), ptr("client-10"), ptr(""), nil} {
		frame := frametest.HeaderBytes(12, 3, 42, id, []byte("body"))
		want, wantRest, err := ParseHeader(frame)
		require.NoError(t, err)
		h, rest, err := ParseHeaderReusing(frame, last)
		require.NoError(t, err)
		assert.Equal(t, want, h)
		assert.Equal(t, wantRest, rest)
		if id != nil {
			assert.NotSame(t, last, h.ClientID)
		}
	}
	_, _, err = ParseHeaderReusing(frame[:len(frame)-len("body")-1], last)
	require.ErrorIs(t, err, ErrMalformedHeader)
}

func TestParseHeaderMalformed(t *testing.T) {
	t.Parallel()
	full := frametest.HeaderBytes(12, 4, 1, ptr("client"), nil)
	tests := []struct {
		name  string
		frame []byte
	}{
		{"empty", nil},
		{"seven bytes", full[:7]},
		{"no client id length", full[:8]},
		{"one byte of client id length", full[:9]},
		{"client id truncated", full[:len(full)-1]},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h, rest, err := ParseHeader(tc.frame)
			require.ErrorIs(t, err, ErrMalformedHeader)
			assert.Equal(t, RequestHeader{}, h)
			assert.Nil(t, rest)
		})
	}
}

func TestDecodeRequest(t *testing.T) {
	t.Parallel()
	hbBody := frametest.Heartbeat(4, 9).AppendTo(nil)
	tests := []struct {
		name  string
		frame []byte
		want  kmsg.Request
	}{
		{"heartbeat v3 header v1", frametest.Formatted(frametest.Heartbeat(3, 9), 1, "c"), frametest.Heartbeat(3, 9)},
		{"heartbeat v4 header v2 empty tags", frametest.Formatted(frametest.Heartbeat(4, 9), 1, "c"), frametest.Heartbeat(4, 9)},
		{
			"heartbeat v4 header v2 with tags",
			frametest.HeaderBytes(12, 4, 1, ptr("c"), append([]byte{2, 0, 1, 'a', 7, 2, 'b', 'c'}, hbBody...)),
			frametest.Heartbeat(4, 9),
		},
		{"heartbeat trailing bytes ignored", append(frametest.Formatted(frametest.Heartbeat(3, 9), 1, "c"), 0xff), frametest.Heartbeat(3, 9)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h, body, err := ParseHeader(tc.frame)
			require.NoError(t, err)
			got, err := DecodeRequest(h, body)
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

// TestDecodeRequestAllocations: decoding a flexible request allocates the
// request and what kmsg copies out of the frame (a Heartbeat's group and
// member ids), and nothing for the header's tagged fields.
func TestDecodeRequestAllocations(t *testing.T) {
	req := frametest.Heartbeat(4, 9)
	req.Group, req.MemberID = "group-1", "member-1"
	frame := frametest.HeaderBytes(12, 4, 1, ptr("c"), append([]byte{1, 0, 1, 'a'}, req.AppendTo(nil)...))
	h, body, err := ParseHeader(frame)
	require.NoError(t, err)
	allocs := testing.AllocsPerRun(20, func() {
		if _, err := DecodeRequest(h, body); err != nil {
			t.Fatal(err)
		}
	})
	assert.Equal(t, 3.0, allocs)
}

func TestDecodeRequestErrors(t *testing.T) {
	t.Parallel()
	hb4 := frametest.Formatted(frametest.Heartbeat(4, 9), 1, "c")
	tests := []struct {
		name        string
		frame       []byte
		wantErr     error
		unsupported *UnsupportedVersionError
	}{
		{"unknown key", frametest.HeaderBytes(9999, 0, 1, nil, nil), ErrUnknownAPIKey, nil},
		{"heartbeat above max", frametest.Formatted(frametest.Heartbeat(5, 9), 1, "c"), ErrUnsupportedVersion, &UnsupportedVersionError{Key: 12, Version: 5}},
		{"heartbeat negative version", frametest.HeaderBytes(12, -1, 1, nil, nil), ErrUnsupportedVersion, &UnsupportedVersionError{Key: 12, Version: -1}},
		{"offset fetch v0 below min", frametest.HeaderBytes(9, 0, 1, nil, nil), ErrUnsupportedVersion, &UnsupportedVersionError{Key: 9, Version: 0}},
		{"produce v2 below min", frametest.HeaderBytes(0, 2, 1, nil, nil), ErrUnsupportedVersion, &UnsupportedVersionError{Key: 0, Version: 2}},
		{"produce v13 above max", frametest.HeaderBytes(0, 13, 1, nil, nil), ErrUnsupportedVersion, &UnsupportedVersionError{Key: 0, Version: 13}},
		{"write txn markers not implemented", frametest.HeaderBytes(27, 0, 1, nil, nil), ErrUnsupportedVersion, &UnsupportedVersionError{Key: 27, Version: 0}},
		{"api versions v99", frametest.HeaderBytes(18, 99, 1, ptr("c"), []byte{0, 0xde, 0xad}), ErrUnsupportedVersion, &UnsupportedVersionError{Key: 18, Version: 99}},
		{"header v2 without tags", hb4[:len(hb4)-len(frametest.Heartbeat(4, 9).AppendTo(nil))-1], ErrMalformedHeader, nil},
		{"header v2 tags truncated", frametest.HeaderBytes(12, 4, 1, nil, []byte{1, 0, 5, 'a'}), ErrMalformedHeader, nil},
		{"heartbeat body truncated", hb4[:len(hb4)-3], ErrMalformedRequest, nil},
		{"heartbeat v0 empty body", frametest.HeaderBytes(12, 0, 1, nil, nil), ErrMalformedRequest, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h, body, err := ParseHeader(tc.frame)
			require.NoError(t, err)
			req, err := DecodeRequest(h, body)
			require.ErrorIs(t, err, tc.wantErr)
			assert.Nil(t, req)
			var uve *UnsupportedVersionError
			assert.Equal(t, tc.unsupported != nil, errors.As(err, &uve))
			if tc.unsupported != nil {
				assert.Equal(t, tc.unsupported, uve)
			}
		})
	}
}

func TestUnsupportedVersionErrorMessage(t *testing.T) {
	t.Parallel()
	assert.EqualError(t, &UnsupportedVersionError{Key: 18, Version: 99},
		"protocol: ApiVersions (key 18) v99: supported versions are 0-4")
	assert.EqualError(t, &UnsupportedVersionError{Key: 0, Version: 13},
		"protocol: Produce (key 0) v13: supported versions are 3-12")
	assert.EqualError(t, &UnsupportedVersionError{Key: 27, Version: 0},
		"protocol: WriteTxnMarkers (key 27) v0: API not supported")
}

func TestUnsupportedAPIVersionsResponse(t *testing.T) {
	t.Parallel()
	resp := UnsupportedAPIVersionsResponse()
	assert.Equal(t, int16(0), resp.Version)
	assert.Equal(t, int16(35), resp.ErrorCode)
	assert.Equal(t, kerr.UnsupportedVersion.Code, resp.ErrorCode)
	require.Len(t, resp.ApiKeys, 1)
	assert.Equal(t, int16(18), resp.ApiKeys[0].ApiKey)
	assert.Equal(t, int16(0), resp.ApiKeys[0].MinVersion)
	assert.Equal(t, int16(4), resp.ApiKeys[0].MaxVersion)

	// Each call returns a fresh response the server may modify.
	resp.ApiKeys[0].MaxVersion = 1
	assert.Equal(t, int16(4), UnsupportedAPIVersionsResponse().ApiKeys[0].MaxVersion)
}

// TestDecodeRequestEveryVersion round-trips a default request of every
// supported API and version through kmsg's client formatter.
func TestDecodeRequestEveryVersion(t *testing.T) {
	t.Parallel()
	for _, vr := range SupportedVersions() {
		for v := vr.Min; v <= vr.Max; v++ {
			t.Run(kmsg.NameForKey(vr.Key), func(t *testing.T) {
				t.Parallel()
				req := kmsg.RequestForKey(vr.Key)
				req.SetVersion(v)
				frame := frametest.Formatted(req, 77, "client")

				h, body, err := ParseHeader(frame)
				require.NoError(t, err)
				assert.Equal(t, RequestHeader{APIKey: vr.Key, APIVersion: v, CorrelationID: 77, ClientID: ptr("client")}, h)
				got, err := DecodeRequest(h, body)
				require.NoError(t, err, "v%d", v)
				assert.Equal(t, v, got.GetVersion())
				assert.Equal(t, req.AppendTo(nil), got.AppendTo(nil), "v%d", v)
			})
		}
	}
}

// FuzzParseHeader checks the request header alone: no input panics, a
// refusal is ErrMalformedHeader, and what parses re-encodes (key, version,
// correlation id, client id with an int16 length) to bytes that parse to
// the same header and rest. Only a null client id may change its bytes:
// Kafka reads any negative length as null, and null is written as -1.
func FuzzParseHeader(f *testing.F) {
	f.Add(frametest.HeaderBytes(12, 4, 1, ptr("kgo"), []byte{0}))
	f.Add(frametest.HeaderBytes(18, 3, -1, nil, nil))
	f.Add(frametest.HeaderBytes(11, 9, 7, ptr(""), []byte{1, 0, 1, 'x'}))
	f.Add([]byte{0, 12, 0, 3, 0, 0, 0, 1, 0xff, 0xfe})
	f.Add([]byte{0, 12, 0, 3, 0, 0, 0, 1, 0x7f, 0xff, 'a'})
	f.Add([]byte{0, 1})
	f.Fuzz(func(t *testing.T, frame []byte) {
		h, rest, err := ParseHeader(frame)
		if err != nil {
			if !errors.Is(err, ErrMalformedHeader) {
				t.Fatalf("unexpected error kind: %v", err)
			}
			return
		}
		if len(rest) > len(frame)-10 {
			t.Fatalf("rest of %d bytes from a %d-byte frame", len(rest), len(frame))
		}
		again := frametest.HeaderBytes(h.APIKey, h.APIVersion, h.CorrelationID, h.ClientID, rest)
		h2, rest2, err := ParseHeader(again)
		if err != nil {
			t.Fatalf("re-encoded header does not parse: %v", err)
		}
		if !reflect.DeepEqual(h, h2) || !bytes.Equal(rest, rest2) {
			t.Fatalf("round trip differs: %+v %x, then %+v %x", h, rest, h2, rest2)
		}
		if h.ClientID != nil && !bytes.Equal(again, frame) {
			t.Fatalf("a header with a client id re-encodes differently:\n%x\n%x", frame, again)
		}
	})
}

// FuzzParseRequest checks that no header or body panics the decoder, that
// only supported versions decode, and that what decodes re-encodes to bytes
// that decode to the same request.
func FuzzParseRequest(f *testing.F) {
	f.Add(frametest.Formatted(frametest.Heartbeat(3, 1), 1, "c"))
	f.Add(frametest.Formatted(frametest.Heartbeat(4, 1), 1, "c"))
	f.Add(frametest.HeaderBytes(12, 4, 1, ptr("c"), append([]byte{1, 0, 1, 'a'}, frametest.Heartbeat(4, 1).AppendTo(nil)...)))
	f.Add(frametest.HeaderBytes(18, 99, 1, nil, nil))
	f.Add(frametest.Formatted(kmsg.NewPtrApiVersionsRequest(), 2, "kgo"))
	f.Add(frametest.Formatted(kmsg.NewPtrJoinGroupRequest(), 3, ""))
	f.Add(frametest.Formatted(kmsg.NewPtrOffsetCommitRequest(), 4, "c"))
	f.Add(frametest.HeaderBytes(9999, 0, 1, nil, nil))
	f.Add([]byte{0, 12})
	f.Fuzz(func(t *testing.T, frame []byte) {
		h, body, err := ParseHeader(frame)
		if err != nil {
			if !errors.Is(err, ErrMalformedHeader) {
				t.Fatalf("ParseHeader: unexpected error kind: %v", err)
			}
			return
		}
		req, err := DecodeRequest(h, body)
		if err != nil {
			return
		}
		if !Supported(req.Key(), req.GetVersion()) || req.Key() != h.APIKey {
			t.Fatalf("decoded %s v%d", kmsg.NameForKey(req.Key()), req.GetVersion())
		}
		first := req.AppendTo(nil)
		again := kmsg.RequestForKey(h.APIKey)
		again.SetVersion(h.APIVersion)
		if err := again.ReadFrom(first); err != nil {
			t.Fatalf("re-encoded request does not decode: %v", err)
		}
		if second := again.AppendTo(nil); !bytes.Equal(first, second) {
			t.Fatalf("round trip differs:\n%x\n%x", first, second)
		}
	})
}
