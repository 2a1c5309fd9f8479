package server

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/testkit/wiretest"
	"github.com/minibroker/minibroker/wireclient"
)

// TestLargeFrameIsReadWhole: a large frame that arrives in pieces with
// pauses shorter than the stall window is read whole and answered, its
// reservation a pool class of its size, given back after the answer.
func TestLargeFrameIsReadWhole(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := wiretest.Dial(t, e.serve(), "producer")
	value := strings.Repeat("v", 200<<10)
	raw := rawRequest(produceRequest(9, "orders", map[int32][]byte{1: batch(value)}), 3, "producer")
	for len(raw) > 0 {
		n := min(len(raw), 50<<10)
		require.NoError(t, c.Send(raw[:n]))
		raw = raw[n:]
	}
	require.NoError(t, c.SetDeadline(time.Now().Add(testTimeout)))
	frame, err := c.ReadFrame()
	require.NoError(t, err)
	resp := kmsg.NewPtrProduceResponse()
	resp.Version = 9
	require.NoError(t, resp.ReadFrom(frame[5:])) // correlation id, header tags
	require.Zero(t, resp.Topics[0].Partitions[0].ErrorCode)
	require.Equal(t, int64(256<<10), e.srv.MemoryStats().Frames.Peak, "a pool class of the frame's size")
	eventually(t, testTimeout, func() bool { return e.srv.InFlightBytes() == 0 }, "given back after the answer")
}

// TestStalledFramesKeepOnlyWhatTheyHold: connections that announce
// large frames and stall keep, once a stall window has passed, only the
// buffers their frames have, so that a producer's large frame beside
// them is read and answered. (Holding their whole size, three of them
// held the budget until FrameReadTimeout.) Their frames are closed after
// FrameReadTimeout all the same.
func TestStalledFramesKeepOnlyWhatTheyHold(t *testing.T) {
	t.Parallel()
	e := newEnvWith(t, envOptions{config: func(cfg *Config) {
		cfg.MaxFrameBytes = 1 << 20
		cfg.MaxInFlightBytes = 1 << 20
		cfg.FrameReadTimeout = 2 * time.Second
	}})
	addr := e.serve()
	var stalled []*wireclient.Client
	for range 3 {
		c := wiretest.Dial(t, addr, "stall")
		require.NoError(t, c.Send(largeFrameHead(300<<10))) // 512 KiB reserved each, until it stalls
		stalled = append(stalled, c)
	}
	eventually(t, testTimeout, func() bool { return e.srv.MemoryStats().Frames.InUse == 3*firstFrameChunk },
		"each stalled frame keeps only its first chunk")

	value := strings.Repeat("p", 300<<10)
	p := wiretest.Do[*kmsg.ProduceResponse](t, wiretest.Dial(t, addr, "producer"), produceRequest(9, "orders", map[int32][]byte{0: batch(value)}))
	require.Zero(t, p.Topics[0].Partitions[0].ErrorCode)
	for _, c := range stalled {
		wiretest.RequireClosed(t, c)
	}
	eventually(t, testTimeout, func() bool { return e.srv.InFlightBytes() == 0 }, "every reservation given back")
}

// TestStalledProduceFrameShrinks: a Produce frame is read into a buffer
// of its whole size at once (512 KiB, the class of its 300 KiB), and once
// it stalls its buffer shrinks to the class of what arrived (64 KiB for
// 40 KiB), which is all it keeps of its reservation until its
// connection is closed.
func TestStalledProduceFrameShrinks(t *testing.T) {
	t.Parallel()
	e := newEnvWith(t, envOptions{config: func(cfg *Config) {
		cfg.MaxFrameBytes = 1 << 20
		cfg.MaxInFlightBytes = 1 << 20
		cfg.FrameReadTimeout = 2 * time.Second
	}})
	c := wiretest.Dial(t, e.serve(), "stall")
	raw := rawRequest(produceRequest(9, "orders", map[int32][]byte{0: batch(strings.Repeat("s", 300<<10))}), 3, "stall")
	require.NoError(t, c.Send(raw[:40<<10]))
	eventually(t, testTimeout, func() bool { return e.srv.MemoryStats().Frames.InUse == 512<<10 },
		"the whole frame's class while it arrives")
	eventually(t, testTimeout, func() bool { return e.srv.MemoryStats().Frames.InUse == 64<<10 },
		"the class of the 40 KiB that arrived once it stalled")
	wiretest.RequireClosed(t, c)
	eventually(t, testTimeout, func() bool { return e.srv.InFlightBytes() == 0 }, "every reservation given back")
}
