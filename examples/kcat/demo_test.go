// Package kcat checks demo.sh, the kcat example the README shows, against a
// minibroker on a loopback port.
package kcat

import (
	"bytes"
	"context"
	"os/exec"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/minibroker/minibroker/broker"
)

// transcript runs demo.sh against the broker at addr with group and
// returns what it printed on stdout.
func transcript(t *testing.T, addr, group string) string {
	t.Helper()
	if _, err := exec.LookPath("kcat"); err != nil {
		t.Fatalf("kcat is not on PATH (%v): run scripts/kcat.sh (make test does) or use -short to skip", err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "demo.sh")
	cmd.Env = append(cmd.Environ(), "BROKER="+addr, "GROUP="+group)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), "demo.sh\nstdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
	return stdout.String()
}

// TestDemo runs demo.sh twice against a broker that already has topic
// orders with records in it (as after the README's walk-through). The
// demo's topic, kcat-demo, is created on first use with one partition, so
// the group reads exactly the three records the run produced, in order,
// and commits the offset after them; the second run reads only its own
// three, from the group's committed offset. orders is not touched.
func TestDemo(t *testing.T) {
	if testing.Short() {
		t.Skip("runs kcat")
	}
	t.Parallel()
	b, err := broker.Start(t.Context(), broker.Config{Topics: map[string]int32{"orders": 4}})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, b.Close()) })

	require.Equal(t, `consumed order-1=espresso partition 0 offset 0
consumed order-2=latte partition 0 offset 1
consumed order-3=mocha partition 0 offset 2
committed kcat-demo 0 3
`, transcript(t, b.Addr(), "demo-test"))
	require.Equal(t, `consumed order-1=espresso partition 0 offset 3
consumed order-2=latte partition 0 offset 4
consumed order-3=mocha partition 0 offset 5
committed kcat-demo 0 6
`, transcript(t, b.Addr(), "demo-test"))
	require.Equal(t, map[string]int32{"orders": 4, "kcat-demo": 1}, b.Catalog().Counts())
}
