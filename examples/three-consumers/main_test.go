package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/minibroker/minibroker/broker"
)

// startBroker starts minibroker as make run does, with topics, the real
// clock and the expiry ticker, on a loopback port, and returns its
// address. Cleanup closes it.
func startBroker(t *testing.T, topics map[string]int32) string {
	t.Helper()
	b, err := broker.Start(context.Background(), broker.Config{Topics: topics, DataDir: t.TempDir()})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, b.Close()) })
	return b.Addr()
}

// TestKgoThreeConsumersSettles runs the demo against an in-process broker: it settles
// with three members, then two, then one, on exactly the round-robin
// assignments the package comment promises, and every consumer printed its
// assignments.
func TestKgoThreeConsumersSettles(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("the demo pauses between steps")
	}
	addr := startBroker(t, map[string]int32{"orders": 4, "payments": 1})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out bytes.Buffer
	require.NoError(t, run(ctx, addr, &out))
	t.Log("\n" + out.String())

	var settled, closing []string
	assigned := map[string]bool{}
	for line := range strings.Lines(out.String()) {
		line = strings.TrimSpace(line)
		switch fields := strings.Fields(line); {
		case strings.HasPrefix(line, "settled:"):
			settled = append(settled, line)
		case strings.HasPrefix(line, "closing "):
			closing = append(closing, fields[1])
		case len(fields) > 1 && fields[1] == "assigned":
			assigned[fields[0]] = true
		}
	}
	assert.Equal(t, []string{
		"settled: 3 members: consumer-a=orders[0 3] consumer-b=orders[1] consumer-c=orders[2]",
		"settled: 2 members: consumer-b=orders[0 2] consumer-c=orders[1 3]",
		"settled: 1 member: consumer-c=orders[0 1 2 3]",
	}, settled)
	assert.Equal(t, []string{"consumer-a", "consumer-b", "consumer-c"}, closing)
	assert.Equal(t, map[string]bool{"consumer-a": true, "consumer-b": true, "consumer-c": true}, assigned)
	assert.True(t, strings.HasSuffix(out.String(), "done\n"))
}

// TestKgoThreeConsumersWithoutTopic fails with a hint when the broker lacks the topic.
func TestKgoThreeConsumersWithoutTopic(t *testing.T) {
	t.Parallel()
	addr := startBroker(t, nil)

	var out bytes.Buffer
	err := run(context.Background(), addr, &out)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `topic "orders"`)
	assert.Empty(t, out.String())
}
