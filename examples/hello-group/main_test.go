package main

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/minibroker/minibroker/broker"
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
	require.NoError(t, run(ctx, b.Addr(), &out))
	require.Regexp(t, `^member hello-group-[0-9a-z]{8}-000001, generation 1: orders \[0 1 2 3\]\n$`, out.String())
}
