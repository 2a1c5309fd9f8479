package wireclient

import (
	"bufio"
	"encoding/binary"
	"io"
	"net"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/protocol"
)

// headerBytes encodes a request header by hand: key, version, correlation id,
// a nullable client id with an int16 length, then tags verbatim (nil for
// header v1, at least one count byte for header v2).
func headerBytes(key, version int16, corr int32, clientID *string, tags []byte) []byte {
	b := kbin.AppendInt16(nil, key)
	b = kbin.AppendInt16(b, version)
	b = kbin.AppendInt32(b, corr)
	b = kbin.AppendNullableString(b, clientID)
	return append(b, tags...)
}

// sizePrefixed returns frame with its int32 big-endian size in front.
func sizePrefixed(frame []byte) []byte {
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(frame))), frame...)
}

// formatted returns req as kmsg's client formatter writes it, without the
// size prefix: what ParseHeader receives from ReadFrame.
func formatted(req kmsg.Request, corr int32, clientID string) []byte {
	f := kmsg.NewRequestFormatter(kmsg.FormatterClientID(clientID))
	return f.AppendRequest(nil, req, corr)[4:]
}

// heartbeat returns a HeartbeatRequest at version with fixed field values.
func heartbeat(version int16, generation int32) *kmsg.HeartbeatRequest {
	req := kmsg.NewPtrHeartbeatRequest()
	req.Version = version
	req.Group = "g"
	req.Generation = generation
	req.MemberID = "m-1"
	return req
}

// serve accepts connections on a loopback listener and runs handle on each in
// its own goroutine. Cleanup closes the listener and every connection and
// waits for the goroutines.
func serve(t *testing.T, handle func(net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex // guards conns
		conns []net.Conn
	)
	wg.Go(func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, conn)
			mu.Unlock()
			wg.Go(func() {
				defer conn.Close()
				handle(conn)
			})
		}
	})
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return ln.Addr().String()
}

// scripted answers the first request of each connection with reply(corrID),
// then reads until the client goes away.
func scripted(reply func(corrID int32) []byte) func(net.Conn) {
	return func(conn net.Conn) {
		br := bufio.NewReader(conn)
		frame, err := protocol.ReadFrame(br, 0, nil)
		if err != nil {
			return
		}
		h, _, err := protocol.ParseHeader(frame)
		if err != nil {
			return
		}
		if raw := reply(h.CorrelationID); raw != nil {
			_, _ = conn.Write(raw)
		}
		_, _ = io.Copy(io.Discard, br)
	}
}
