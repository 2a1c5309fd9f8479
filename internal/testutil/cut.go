package testutil

import (
	"context"
	"errors"
	"net"
	"sync"
)

// ErrCut is what CutDialer's dials return once it is cut.
var ErrCut = errors.New("testutil: network cut")

// CutDialer dials TCP and remembers every connection, so that Cut can
// sever them all at once and refuse new ones: a crashed client, as the
// broker sees it. Its DialContext fits kgo.Dialer. The zero value is ready.
type CutDialer struct {
	mu    sync.Mutex
	cut   bool                  // guarded by mu
	conns map[net.Conn]struct{} // guarded by mu
}

// DialContext dials network and address, unless the dialer is cut.
func (d *CutDialer) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	var nd net.Dialer
	conn, err := nd.DialContext(ctx, network, address)
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.cut {
		conn.Close()
		return nil, ErrCut
	}
	if d.conns == nil {
		d.conns = make(map[net.Conn]struct{})
	}
	d.conns[conn] = struct{}{}
	return conn, nil
}

// Cut resets every connection (RST, as a crashed host's kernel would send)
// and makes later dials fail with ErrCut.
func (d *CutDialer) Cut() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.cut = true
	for conn := range d.conns {
		if tc, ok := conn.(*net.TCPConn); ok {
			_ = tc.SetLinger(0)
		}
		conn.Close()
	}
	d.conns = nil
}
