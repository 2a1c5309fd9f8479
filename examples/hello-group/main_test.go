package main

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/minibroker/minibroker/broker"
	"github.com/minibroker/minibroker/coordinator"
)

func TestHelloGroupPrintsItsAssignment(t *testing.T) {
	t.Parallel()
	b, err := broker.Start(context.Background(), broker.Config{
		Topics:         map[string]int32{"orders": 4, "payments": 1},
		ExpiryInterval: 50 * time.Millisecond, ServerSettings: broker.ServerSettings{MaxFetchWait: 100 * time.Millisecond},
	})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, b.Close()) })

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var out bytes.Buffer
	require.NoError(t, run(ctx, b.Addr(), false, &out))
	require.Regexp(t, `^member hello-group-[0-9a-z]{8}-000001, generation 1: orders \[0 1 2 3\]\n$`, out.String())
	v, ok := b.Coordinator().Describe("hello")
	require.True(t, ok)
	require.Equal(t, coordinator.ClassicGroup, v.Type)
}

// TestHelloGroupConsumerProtocol: with --consumer-protocol the member
// joins over KIP-848 (kgo.ServerSideBalancer and a range balancer), with
// an id of its own (kgo's: 16 random bytes, base64) at member epoch 1,
// and the group is a consumer group.
func TestHelloGroupConsumerProtocol(t *testing.T) {
	t.Parallel()
	b, err := broker.Start(context.Background(), broker.Config{Topics: map[string]int32{"orders": 4}})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, b.Close()) })

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var out bytes.Buffer
	require.NoError(t, run(ctx, b.Addr(), true, &out))
	require.Regexp(t, `^member [A-Za-z0-9_-]{22}==, epoch 1: orders \[0 1 2 3\]\n$`, out.String())
	v, ok := b.Coordinator().Describe("hello")
	require.True(t, ok)
	require.Equal(t, coordinator.ConsumerGroup, v.Type, "the group the member joined speaks KIP-848")
}
