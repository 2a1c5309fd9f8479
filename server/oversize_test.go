package server

import (
	"encoding/binary"
	"fmt"
	"log/slog"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/testkit/wiretest"
	"github.com/minibroker/minibroker/wireclient"
)

// produceHead is the start of a Produce v7 frame from client "big"
// whose one partition of topic carries n bytes of records, which are
// not part of it: the size prefix, the header, and the body up to the
// records.
func produceHead(corr int32, acks int16, topic string, partition int32, n int) []byte {
	b := kbin.AppendInt16(nil, int16(kmsg.Produce))
	b = kbin.AppendInt16(b, 7)
	b = kbin.AppendInt32(b, corr)
	b = kbin.AppendString(b, "big")
	b = kbin.AppendInt16(b, -1) // no transactional id
	b = kbin.AppendInt16(b, acks)
	b = kbin.AppendInt32(b, 5000)
	b = kbin.AppendInt32(b, 1)
	b = kbin.AppendString(b, topic)
	b = kbin.AppendInt32(b, 1)
	b = kbin.AppendInt32(b, partition)
	b = kbin.AppendInt32(b, int32(n))
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(b)+n)), b...)
}

// sendRecords sends n bytes of records (zeros) through one reused
// buffer, so that the test holds none of them.
func sendRecords(t *testing.T, c *wireclient.Client, n int) {
	t.Helper()
	chunk := make([]byte, 64<<10)
	for n > 0 {
		require.NoError(t, c.Send(chunk[:min(n, len(chunk))]))
		n -= min(n, len(chunk))
	}
}

// readProduceAnswer reads a Produce v7 answer from c.
func readProduceAnswer(t *testing.T, c *wireclient.Client) (int32, *kmsg.ProduceResponse) {
	t.Helper()
	require.NoError(t, c.SetDeadline(time.Now().Add(testTimeout)))
	frame, err := c.ReadFrame()
	require.NoError(t, err)
	resp := kmsg.NewPtrProduceResponse()
	resp.Version = 7
	require.NoError(t, resp.ReadFrom(frame[4:]))
	return int32(binary.BigEndian.Uint32(frame)), resp
}

// TestOversizedProduceHoldsOnlyItsSkim: a Produce of 32 MiB to a broker
// whose frames are capped at 1 MiB is read past, not held: the budget's
// frames lane holds skimHoldBytes at most, the work lane nothing, and the
// heap allocates a small fraction of the frame while it is discarded. The
// answer is MESSAGE_TOO_LARGE, and the connection goes on. Not parallel:
// the heap is measured for the whole process.
func TestOversizedProduceHoldsOnlyItsSkim(t *testing.T) {
	e := newEnvWith(t, envOptions{config: func(cfg *Config) {
		cfg.MaxFrameBytes = 1 << 20
		cfg.MaxInFlightBytes = 1 << 20
	}})
	c := wiretest.Dial(t, e.serve(), "big")
	wiretest.Do[*kmsg.ApiVersionsResponse](t, c, apiVersionsRequest(3)) // the connection is set up
	const records = 32 << 20

	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	require.NoError(t, c.Send(produceHead(41, -1, "orders", 2, records)))
	sendRecords(t, c, records)
	corr, resp := readProduceAnswer(t, c)
	runtime.ReadMemStats(&after)

	require.Equal(t, int32(41), corr)
	require.Len(t, resp.Topics, 1)
	require.Len(t, resp.Topics[0].Partitions, 1)
	assert.Equal(t, kerr.MessageTooLarge.Code, resp.Topics[0].Partitions[0].ErrorCode)
	st := e.srv.MemoryStats()
	assert.Equal(t, int64(skimHoldBytes), st.Frames.Peak, "the skim's reservation, not the frame's size")
	assert.Zero(t, st.Work.Peak, "a small answer reserves nothing")
	allocated := after.TotalAlloc - before.TotalAlloc
	assert.Less(t, allocated, uint64(4<<20), "allocated %d bytes while discarding %d", allocated, records)
	eventually(t, testTimeout, func() bool { return e.srv.InFlightBytes() == 0 }, "given back after the answer")

	md := wiretest.Do[*kmsg.MetadataResponse](t, c, metadataRequest(9, []string{"orders"}))
	require.Len(t, md.Topics, 1, "the connection goes on")
	assert.Zero(t, e.log.Stats().BatchesAppended, "nothing stored")
}

// TestOversizedFrameStallIsClosed: a skimmed frame must arrive within
// FrameReadTimeout of its first byte, as any frame; a sender that stalls
// inside its records is closed, logged at Warn, and its skim's
// reservation given back.
func TestOversizedFrameStallIsClosed(t *testing.T) {
	t.Parallel()
	e := newEnvWith(t, envOptions{config: func(cfg *Config) {
		cfg.MaxFrameBytes = 1 << 20
		cfg.FrameReadTimeout = 300 * time.Millisecond
	}})
	c := wiretest.Dial(t, e.serve(), "big")
	head := produceHead(1, -1, "orders", 0, 4<<20)
	require.NoError(t, c.Send(head))
	sendRecords(t, c, 2<<20)
	eventually(t, testTimeout, func() bool { return e.srv.MemoryStats().Frames.InUse == skimHoldBytes }, "the skim holds its reservation")
	wiretest.RequireClosed(t, c)
	eventually(t, testTimeout, func() bool { return e.srv.InFlightBytes() == 0 }, "the reservation is given back")
	logged := e.logs.Find("closing connection")
	require.NotEmpty(t, logged)
	assert.Equal(t, slog.LevelWarn, logged[0].Level)
	assert.Equal(t, fmt.Sprintf("request frame not completed in time: a frame of %d bytes not read within 300ms", len(head)-4+4<<20), logged[0].Attrs["err"])
}

// TestOversizedFrameCloses: what is not answered over MaxFrameBytes
// closes the connection, logged once at Warn
// with the flag, the API, the version, the client id and the remote:
// another API (Kafka answers it, holding it; no such request is that
// large but by mistake) and a Produce of a version we do not speak, once
// their header is read; a Produce with acks 0 once it is read whole, as
// Kafka closes after any failed acks-0 produce (nothing carries its
// error). A frame over Kafka's own 100 MiB closes unread.
func TestOversizedFrameCloses(t *testing.T) {
	t.Parallel()
	metadata := func(size int32) []byte {
		b := binary.BigEndian.AppendUint32(nil, uint32(size))
		b = kbin.AppendInt16(b, int16(kmsg.Metadata))
		b = kbin.AppendInt16(b, 9)
		b = kbin.AppendInt32(b, 3)
		return kbin.AppendString(b, "big")
	}
	produce13 := produceHead(3, -1, "orders", 0, 2<<20)
	binary.BigEndian.PutUint16(produce13[6:], 13)
	tests := []struct {
		name    string
		raw     []byte
		records int // sent after raw
		api     string
		version int16
		outcome string
	}{
		{"metadata", metadata(2 << 20), 0, "Metadata", 9, "request over --max-frame-bytes, closing connection as Kafka closes one over socket.request.max.bytes"},
		{"produce v13", produce13, 0, "Produce", 13, "request over --max-frame-bytes, closing connection as Kafka closes one over socket.request.max.bytes"},
		{"produce acks 0", produceHead(3, 0, "orders", 0, 2<<20), 2 << 20, "Produce", 7, "request over --max-frame-bytes, closing connection: with acks 0 nothing carries its error"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnvWith(t, envOptions{config: func(cfg *Config) { cfg.MaxFrameBytes = 1 << 20 }})
			c := wiretest.Dial(t, e.serve(), "big")
			require.NoError(t, c.Send(tc.raw))
			sendRecords(t, c, tc.records)
			wiretest.RequireClosed(t, c)
			logged := e.logs.Find(tc.outcome)
			require.Len(t, logged, 1, "logged once")
			assert.Equal(t, slog.LevelWarn, logged[0].Level)
			assert.Equal(t, tc.api, logged[0].Attrs["api"])
			assert.Equal(t, strconv.Itoa(int(tc.version)), logged[0].Attrs["version"])
			assert.Equal(t, "big", logged[0].Attrs["client_id"])
			assert.Equal(t, "1048576", logged[0].Attrs["max_frame_bytes"])
			assert.Equal(t, c.LocalAddr(), logged[0].Attrs["remote"])
			eventually(t, testTimeout, func() bool { return e.srv.InFlightBytes() == 0 }, "nothing held")
		})
	}

	t.Run("over 100 MiB", func(t *testing.T) {
		t.Parallel()
		e := newEnvWith(t, envOptions{config: func(cfg *Config) { cfg.MaxFrameBytes = 1 << 20 }})
		c := wiretest.Dial(t, e.serve(), "huge")
		require.NoError(t, c.Send(metadata(maxSkimFrameBytes+1))) // the header follows, but is not read
		wiretest.RequireClosed(t, c)
		eventually(t, testTimeout, func() bool { return len(e.logs.Find("closing connection")) == 1 }, "logged")
		assert.Equal(t, "protocol: frame size 104857601 exceeds max 1048576", e.logs.Find("closing connection")[0].Attrs["err"])
		assert.Zero(t, e.srv.MemoryStats().Frames.Peak, "nothing reserved")
	})
}

// TestOversizedProduceIsLoggedOnce: an answered frame over the limit is
// one Warn line naming the flag, the API, the version, the client id, the
// remote, the frame's size and the limit.
func TestOversizedProduceIsLoggedOnce(t *testing.T) {
	t.Parallel()
	e := newEnvWith(t, envOptions{config: func(cfg *Config) { cfg.MaxFrameBytes = 1 << 20 }})
	c := wiretest.Dial(t, e.serve(), "big")
	head := produceHead(5, 1, "orders", 0, 2<<20)
	require.NoError(t, c.Send(head))
	sendRecords(t, c, 2<<20)
	_, resp := readProduceAnswer(t, c)
	require.Equal(t, kerr.MessageTooLarge.Code, resp.Topics[0].Partitions[0].ErrorCode)
	logged := e.logs.Find("request over --max-frame-bytes, read and discarded, answered MESSAGE_TOO_LARGE")
	require.Len(t, logged, 1)
	assert.Equal(t, slog.LevelWarn, logged[0].Level)
	assert.Equal(t, map[string]string{
		"remote": c.LocalAddr(), "api": "Produce", "version": "7", "client_id": "big",
		"bytes": strconv.Itoa(len(head) - 4 + 2<<20), "max_frame_bytes": "1048576", "suppressed": "0",
	}, logged[0].Attrs)
}

// TestOversizedFrameWithSASL: before authentication a frame over 512 KiB
// still closes unread (TestSASLLargeFrameBeforeAuthentication); once
// authenticated, a Produce over MaxFrameBytes is skimmed and answered.
func TestOversizedFrameWithSASL(t *testing.T) {
	t.Parallel()
	_, addr := newSASLEnv(t, func(cfg *Config) { cfg.MaxFrameBytes = 1 << 20 })
	c := wiretest.Dial(t, addr, "big")
	authenticatePlain(t, c, "alice", "alice-secret")
	require.NoError(t, c.Send(produceHead(9, -1, "orders", 3, 2<<20)))
	sendRecords(t, c, 2<<20)
	corr, resp := readProduceAnswer(t, c)
	require.Equal(t, int32(9), corr)
	require.Equal(t, kerr.MessageTooLarge.Code, resp.Topics[0].Partitions[0].ErrorCode)
	require.Equal(t, int32(3), resp.Topics[0].Partitions[0].Partition)
}
