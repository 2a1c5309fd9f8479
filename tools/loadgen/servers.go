package loadgen

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/minibroker/minibroker/broker"
)

// Server is a server under test running in this process.
type Server struct {
	Addr string
	stop func() error
}

// Stop stops the server and waits for it.
func (s *Server) Stop() error { return s.stop() }

// StartMinibroker runs minibroker in this process on a loopback port, as
// "minibroker serve" runs it: offsets in dir (in memory when dir is ""),
// the real clock with the expiry step every 100 ms.
func StartMinibroker(dir string, topics map[string]int32) (*Server, error) {
	b, err := broker.Start(context.Background(), broker.Config{DataDir: dir, Topics: topics})
	if err != nil {
		return nil, err
	}
	return &Server{Addr: b.Addr(), stop: b.Close}, nil
}

// StartFloor runs the floor server (ServeFloor) in this process on addr
// ("127.0.0.1:0" for any port).
func StartFloor(addr string, cfg FloorConfig) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	fl, err := newFloor(cfg, ln.Addr())
	if err != nil {
		ln.Close()
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- fl.serve(ctx, ln) }()
	return &Server{Addr: ln.Addr().String(), stop: func() error { cancel(); return <-done }}, nil
}

// KfakeConfig configures StartKfake.
type KfakeConfig struct {
	Port       int // 0: any
	Topic      string
	Partitions int32
	// DataDir enables kfake's persistence (kfake.DataDir); Fsync adds
	// kfake.SyncWrites, an fsync per persisted entry.
	DataDir string
	Fsync   bool
}

// StartKfake runs a one-broker kfake cluster in this process.
func StartKfake(cfg KfakeConfig) (*Server, error) {
	opts := []kfake.Opt{
		kfake.Ports(cfg.Port),
		kfake.SeedTopics(cfg.Partitions, cfg.Topic),
		kfake.GroupMaxSessionTimeout(5 * time.Minute),
	}
	if cfg.DataDir != "" {
		opts = append(opts, kfake.DataDir(cfg.DataDir))
	}
	if cfg.Fsync {
		if cfg.DataDir == "" {
			return nil, errors.New("loadgen: kfake fsync needs a data dir")
		}
		opts = append(opts, kfake.SyncWrites())
	}
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		return nil, fmt.Errorf("loadgen: kfake: %w", err)
	}
	addrs := c.ListenAddrs()
	if len(addrs) != 1 {
		c.Close()
		return nil, fmt.Errorf("loadgen: kfake listens on %v, want one address", addrs)
	}
	return &Server{Addr: addrs[0], stop: func() error { c.Close(); return nil }}, nil
}

// FreePort returns a loopback port that was free a moment ago.
func FreePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	_, port, err := net.SplitHostPort(ln.Addr().String())
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(port)
}
