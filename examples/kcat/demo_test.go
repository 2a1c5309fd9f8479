// Package kcat checks demo.sh, the kcat example the README shows, against a
// broker on a loopback port.
package kcat

import (
	"bytes"
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
)

// startBroker starts the broker demo.sh runs against, with topic orders(4),
// on 127.0.0.1 with a port the kernel picks, and returns its address. Like
// startBroker in integration/clients/broker_test.go (the seam of the
// real-client tests), it starts kfake until minibroker stores records, and
// will then start minibroker's embedded broker:
//
//	b, err := broker.Start(t.Context(), broker.Config{Topics: map[string]int32{"orders": 4}})
//	require.NoError(t, err)
//	t.Cleanup(func() { require.NoError(t, b.Close()) })
//	return b.Addr()
func startBroker(t *testing.T) string {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(4, "orders"))
	if err != nil {
		t.Fatalf("kfake: %v", err)
	}
	t.Cleanup(c.Close)
	return c.ListenAddrs()[0]
}

// TestDemo runs demo.sh with BROKER set. kcat's default partitioner,
// consistent_random, puts each key on crc32(key) mod 4: order-1 and order-3
// on partition 3, order-2 on partition 1. The group reads each record once
// and commits the next offset of the partitions it read; the others have no
// commit (-1).
func TestDemo(t *testing.T) {
	if testing.Short() {
		t.Skip("runs kcat")
	}
	if _, err := exec.LookPath("kcat"); err != nil {
		t.Fatalf("kcat is not on PATH (%v): run scripts/kcat.sh (make test does) or use -short to skip", err)
	}
	addr := startBroker(t)
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "demo.sh")
	cmd.Env = append(cmd.Environ(), "BROKER="+addr, "GROUP=demo-test")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("demo.sh: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}

	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	consumed, offsets := lines[:min(3, len(lines))], lines[min(3, len(lines)):]
	want := []string{
		"consumed order-1=espresso partition 3 offset 0",
		"consumed order-3=mocha partition 3 offset 1",
		"consumed order-2=latte partition 1 offset 0",
	}
	if !sameLines(consumed, want) {
		t.Errorf("consumed:\n%s\nwant, in any order across partitions:\n%s", strings.Join(consumed, "\n"), strings.Join(want, "\n"))
	}
	// Within a partition, the records come in offset order.
	if i1, i3 := indexOf(consumed, want[0]), indexOf(consumed, want[1]); i1 > i3 {
		t.Errorf("partition 3 read out of order:\n%s", strings.Join(consumed, "\n"))
	}
	wantOffsets := []string{
		"committed orders 0 -1",
		"committed orders 1 1",
		"committed orders 2 -1",
		"committed orders 3 2",
	}
	if strings.Join(offsets, "\n") != strings.Join(wantOffsets, "\n") {
		t.Errorf("committed offsets:\n%s\nwant:\n%s\nstderr:\n%s", strings.Join(offsets, "\n"), strings.Join(wantOffsets, "\n"), stderr.String())
	}
}

func sameLines(got, want []string) bool {
	if len(got) != len(want) {
		return false
	}
	for _, w := range want {
		if indexOf(got, w) < 0 {
			return false
		}
	}
	return true
}

func indexOf(lines []string, s string) int {
	for i, l := range lines {
		if l == s {
			return i
		}
	}
	return -1
}
