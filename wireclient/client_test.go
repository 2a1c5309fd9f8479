package wireclient

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	"github.com/minibroker/minibroker/protocol"
	"github.com/minibroker/minibroker/testkit/frametest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// echoBroker answers ApiVersions with our table and Heartbeat with its
// generation echoed in ErrorCode (present at every version), so tests can
// check response order. It
// closes the connection on anything else, as the server does.
func echoBroker(conn net.Conn) {
	br := bufio.NewReader(conn)
	var in, out []byte
	for {
		frame, err := protocol.ReadFrame(br, 0, in)
		if err != nil {
			return
		}
		in = frame
		h, body, err := protocol.ParseHeader(frame)
		if err != nil {
			return
		}
		var resp kmsg.Response
		req, err := protocol.DecodeRequest(h, body)
		var uve *protocol.UnsupportedVersionError
		switch {
		case errors.As(err, &uve) && uve.Key == int16(kmsg.ApiVersions):
			resp = protocol.UnsupportedAPIVersionsResponse()
		case err != nil:
			return
		default:
			resp = answer(req)
		}
		if resp == nil {
			return
		}
		out = protocol.AppendResponse(out[:0], h.CorrelationID, resp)
		if _, err := conn.Write(out); err != nil {
			return
		}
	}
}

func answer(req kmsg.Request) kmsg.Response {
	switch req := req.(type) {
	case *kmsg.ApiVersionsRequest:
		resp := req.ResponseKind().(*kmsg.ApiVersionsResponse)
		for _, vr := range protocol.SupportedVersions() {
			k := kmsg.NewApiVersionsResponseApiKey()
			k.ApiKey, k.MinVersion, k.MaxVersion = vr.Key, vr.Min, vr.Max
			resp.ApiKeys = append(resp.ApiKeys, k)
		}
		return resp
	case *kmsg.HeartbeatRequest:
		resp := req.ResponseKind().(*kmsg.HeartbeatResponse)
		resp.ErrorCode = int16(req.Generation)
		return resp
	}
	return nil
}

func dial(t *testing.T, addr string) *Client {
	t.Helper()
	c, err := Dial(t.Context(), addr, "test-client")
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

func apiVersions(v int16) *kmsg.ApiVersionsRequest {
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = v
	req.ClientSoftwareName, req.ClientSoftwareVersion = "protocol-test", "1.0"
	return req
}

func TestClientAPIVersions(t *testing.T) {
	t.Parallel()
	addr := serve(t, echoBroker)
	for _, v := range []int16{0, 3, 4} {
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) {
			t.Parallel()
			c := dial(t, addr)
			resp, err := c.Request(t.Context(), apiVersions(v))
			require.NoError(t, err)
			av := resp.(*kmsg.ApiVersionsResponse)
			assert.Equal(t, v, av.Version)
			assert.Equal(t, int16(0), av.ErrorCode)
			require.Len(t, av.ApiKeys, len(protocol.SupportedVersions()))
			for i, vr := range protocol.SupportedVersions() {
				got := av.ApiKeys[i]
				assert.Equal(t, vr, protocol.VersionRange{Key: got.ApiKey, Min: got.MinVersion, Max: got.MaxVersion})
			}
		})
	}
}

// TestClientAPIVersionsFallback follows KIP-511: an unsupported ApiVersions
// version gets a v0 error body and the connection stays open for the retry.
func TestClientAPIVersionsFallback(t *testing.T) {
	t.Parallel()
	addr := serve(t, echoBroker)
	for _, v := range []int16{5, 99} {
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) {
			t.Parallel()
			c := dial(t, addr)
			resp, err := c.Request(t.Context(), apiVersions(v))
			require.NoError(t, err)
			av := resp.(*kmsg.ApiVersionsResponse)
			assert.Equal(t, int16(0), av.Version)
			assert.Equal(t, kerr.UnsupportedVersion.Code, av.ErrorCode)
			require.Len(t, av.ApiKeys, 1)
			assert.Equal(t, kmsg.ApiVersionsResponseApiKey{ApiKey: 18, MinVersion: 0, MaxVersion: 4}, av.ApiKeys[0])

			resp, err = c.Request(t.Context(), apiVersions(av.ApiKeys[0].MaxVersion))
			require.NoError(t, err)
			assert.Equal(t, int16(0), resp.(*kmsg.ApiVersionsResponse).ErrorCode)
		})
	}
}

func TestClientHeartbeat(t *testing.T) {
	t.Parallel()
	addr := serve(t, echoBroker)
	c := dial(t, addr)
	for v := int16(0); v <= 4; v++ { // header v1 for v0-3, v2 (flexible) for v4
		resp, err := c.Request(t.Context(), frametest.Heartbeat(v, int32(100+v)))
		require.NoError(t, err, "v%d", v)
		hb := resp.(*kmsg.HeartbeatResponse)
		assert.Equal(t, v, hb.Version)
		assert.Equal(t, 100+v, hb.ErrorCode)
	}
}

func TestClientPipeline(t *testing.T) {
	t.Parallel()
	addr := serve(t, echoBroker)
	c := dial(t, addr)
	reqs := make([]kmsg.Request, 200)
	for i := range reqs {
		if i%50 == 0 {
			reqs[i] = apiVersions(int16(i / 50))
			continue
		}
		reqs[i] = frametest.Heartbeat(int16(i%5), int32(i))
	}
	resps, err := c.Pipeline(t.Context(), reqs)
	require.NoError(t, err)
	require.Len(t, resps, len(reqs))
	for i, resp := range resps {
		assert.Equal(t, reqs[i].Key(), resp.Key(), "response %d", i)
		assert.Equal(t, reqs[i].GetVersion(), resp.GetVersion(), "response %d", i)
		if hb, ok := resp.(*kmsg.HeartbeatResponse); ok {
			assert.Equal(t, int16(i), hb.ErrorCode, "response %d out of order", i)
		}
	}

	resps, err = c.Pipeline(t.Context(), nil)
	assert.NoError(t, err)
	assert.Empty(t, resps)
}

// TestClientHostileInput sends frames the server must close on.
func TestClientHostileInput(t *testing.T) {
	t.Parallel()
	addr := serve(t, echoBroker)
	tests := []struct {
		name string
		raw  []byte
	}{
		{"negative size", []byte{0xff, 0xff, 0xff, 0xff}},
		{"oversize", []byte{0x7f, 0xff, 0xff, 0xff}},
		{"unknown key", frametest.SizePrefixed(frametest.HeaderBytes(9999, 0, 1, nil, nil))},
		{"unsupported heartbeat", frametest.SizePrefixed(frametest.Formatted(frametest.Heartbeat(5, 1), 1, "c"))},
		{"truncated header", frametest.SizePrefixed([]byte{0, 12, 0})},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := dial(t, addr)
			require.NoError(t, c.SetDeadline(time.Now().Add(10*time.Second)))
			require.NoError(t, c.Send(tc.raw))
			frame, err := c.ReadFrame()
			assert.ErrorIs(t, err, io.EOF, "server must close")
			assert.Nil(t, frame)
		})
	}
}

// TestClientRawFrame reads an answer to a request sent with Send.
func TestClientRawFrame(t *testing.T) {
	t.Parallel()
	c := dial(t, serve(t, echoBroker))
	require.NoError(t, c.Send(frametest.SizePrefixed(frametest.Formatted(frametest.Heartbeat(3, 5), 41, "c"))))
	frame, err := c.ReadFrame()
	require.NoError(t, err)
	assert.Equal(t, []byte{0, 0, 0, 41, 0, 0, 0, 0, 0, 5}, frame) // corr, throttle, error code
}

func TestClientBadResponses(t *testing.T) {
	t.Parallel()
	corr := func(id int32) []byte { return []byte{byte(id >> 24), byte(id >> 16), byte(id >> 8), byte(id)} }
	tests := []struct {
		name    string
		req     kmsg.Request
		reply   func(int32) []byte
		wantErr error
		wantMsg string
	}{
		{"correlation mismatch", frametest.Heartbeat(3, 1),
			func(id int32) []byte { return frametest.SizePrefixed(append(corr(id+1), 0, 0, 0, 0, 0, 0)) },
			ErrCorrelationMismatch, "got 1, want 0"},
		{"no correlation id", frametest.Heartbeat(3, 1),
			func(int32) []byte { return frametest.SizePrefixed([]byte{0, 0}) }, nil, "has no correlation id"},
		{"missing header tags", frametest.Heartbeat(4, 1),
			func(id int32) []byte { return frametest.SizePrefixed(corr(id)) }, nil, "header tags truncated"},
		{"truncated body", frametest.Heartbeat(3, 1),
			func(id int32) []byte { return frametest.SizePrefixed(append(corr(id), 0, 0)) }, nil, "decode Heartbeat v3 response"},
		{"closed", frametest.Heartbeat(3, 1), func(int32) []byte { return nil }, io.EOF, "read Heartbeat response"},
		{"oversize", frametest.Heartbeat(3, 1),
			func(int32) []byte { return []byte{0x7f, 0xff, 0xff, 0xff} }, protocol.ErrFrameTooLarge, "exceeds max"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			handle := scripted(tc.reply)
			if tc.name == "closed" {
				handle = func(conn net.Conn) { _, _ = protocol.ReadFrame(conn, 0, nil) }
			}
			c := dial(t, serve(t, handle))
			resp, err := c.Request(t.Context(), tc.req)
			require.Error(t, err)
			assert.Nil(t, resp)
			if tc.wantErr != nil {
				assert.ErrorIs(t, err, tc.wantErr)
			}
			assert.ErrorContains(t, err, tc.wantMsg)
		})
	}
}

func TestClientContext(t *testing.T) {
	t.Parallel()
	t.Run("deadline", func(t *testing.T) {
		t.Parallel()
		c := dial(t, serve(t, scripted(func(int32) []byte { return nil }))) // never answers
		ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
		defer cancel()
		_, err := c.Request(ctx, frametest.Heartbeat(3, 1))
		assert.ErrorIs(t, err, context.DeadlineExceeded)
	})
	t.Run("cancel while waiting", func(t *testing.T) {
		t.Parallel()
		ctx, cancel := context.WithCancel(t.Context())
		c := dial(t, serve(t, scripted(func(int32) []byte { cancel(); return nil })))
		_, err := c.Request(ctx, frametest.Heartbeat(3, 1))
		assert.ErrorIs(t, err, context.Canceled)
	})
	t.Run("already cancelled", func(t *testing.T) {
		t.Parallel()
		c := dial(t, serve(t, echoBroker))
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		_, err := c.Request(ctx, frametest.Heartbeat(3, 1))
		assert.ErrorIs(t, err, context.Canceled)

		resp, err := c.Request(t.Context(), frametest.Heartbeat(3, 8))
		require.NoError(t, err, "the connection is still usable")
		assert.Equal(t, int16(8), resp.(*kmsg.HeartbeatResponse).ErrorCode)
	})
	t.Run("dial cancelled", func(t *testing.T) {
		t.Parallel()
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		c, err := Dial(ctx, "127.0.0.1:1", "c")
		assert.ErrorIs(t, err, context.Canceled)
		assert.Nil(t, c)
	})
}

func TestClientClose(t *testing.T) {
	t.Parallel()
	c := dial(t, serve(t, echoBroker))
	require.NoError(t, c.Close())
	assert.NoError(t, c.Close(), "Close is idempotent")
	_, err := c.Request(t.Context(), frametest.Heartbeat(3, 1))
	assert.ErrorIs(t, err, net.ErrClosed)
	assert.ErrorIs(t, c.Send([]byte{1}), net.ErrClosed)
}
