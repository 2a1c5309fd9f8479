package testutil

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"
)

// TestCutDialer: a cut closes the connections dialed so far, and later
// dials fail with ErrCut.
func TestCutDialer(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err == nil {
			accepted <- c
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var d CutDialer
	conn, err := d.DialContext(ctx, "tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	peer := <-accepted
	defer peer.Close()

	d.Cut()
	_ = peer.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := peer.Read(make([]byte, 1)); err == nil {
		t.Fatal("the peer read data from a cut connection")
	}
	if _, err := d.DialContext(ctx, "tcp", ln.Addr().String()); !errors.Is(err, ErrCut) {
		t.Fatalf("dial after Cut: %v, want ErrCut", err)
	}
}
