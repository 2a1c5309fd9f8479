package testutil

import (
	"crypto/tls"
	"net"
	"testing"
)

// handshake runs a TLS handshake over loopback TCP (whose buffers, unlike
// net.Pipe's, let both sides send their alerts) and returns the server's
// error.
func handshake(t *testing.T, server, client *tls.Config) error {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	clientDone := make(chan struct{})
	go func() {
		defer close(clientDone)
		c, err := tls.Dial("tcp", ln.Addr().String(), client)
		if err == nil {
			_, _ = c.Read(make([]byte, 1)) // the server's alert, or its close
			c.Close()
		}
	}()
	conn, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	sc := tls.Server(conn, server)
	err = sc.Handshake()
	sc.Close()
	<-clientDone
	return err
}

func TestPKIHandshakes(t *testing.T) {
	t.Parallel()
	p := NewPKI(t)
	for _, tc := range []struct {
		name       string
		clientAuth bool
		withCert   bool
		ok         bool
	}{
		{"server only", false, false, true},
		{"mutual", true, true, true},
		{"client certificate missing", true, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			client := p.ClientConfig(tc.withCert)
			client.ServerName = "127.0.0.1"
			err := handshake(t, p.ServerConfig(tc.clientAuth), client)
			if (err == nil) != tc.ok {
				t.Fatalf("handshake error %v, want success %v", err, tc.ok)
			}
		})
	}
}

func TestPKIFiles(t *testing.T) {
	t.Parallel()
	p := NewPKI(t)
	cert, err := tls.LoadX509KeyPair(p.ServerCertFile, p.ServerKeyFile)
	if err != nil {
		t.Fatal(err)
	}
	client := p.ClientConfig(false)
	client.ServerName = "localhost"
	if err := handshake(t, &tls.Config{Certificates: []tls.Certificate{cert}}, client); err != nil {
		t.Fatalf("the server files do not serve: %v", err)
	}
	if p.CAFile == "" {
		t.Fatal("no CA file")
	}
}
