package wireclient

import (
	"bufio"
	"io"
	"net"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/minibroker/minibroker/protocol"
)

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
