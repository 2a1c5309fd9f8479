package integration

// A Produce over --max-frame-bytes, over the wire: answered, not closed
// (server/oversize.go), with kgo and raw requests.

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/broker"
	"github.com/minibroker/minibroker/testkit/wiretest"
)

// oversizeFrameCap is the broker's --max-frame-bytes in the raw tests.
const oversizeFrameCap = 64 << 10

// TestWireOversizedProduceIsAnswered: a Produce whose frame is over
// --max-frame-bytes (two topics, three partitions, 96 KiB of batches
// against a 64 KiB cap) is answered, with its correlation id, every topic
// and partition it names in its order, MESSAGE_TOO_LARGE, base offset and
// log start offset -1 and (v8+) a message naming the flag; nothing of it is
// stored, and the same connection answers the next request. At a version
// before flexible encoding (7) and at the one kgo sends (12).
func TestWireOversizedProduceIsAnswered(t *testing.T) {
	t.Parallel()
	for _, version := range []int16{7, 12} {
		t.Run(fmt.Sprintf("v%d", version), func(t *testing.T) {
			t.Parallel()
			b := startBroker(t, func(cfg *broker.Config) { cfg.MaxFrameBytes = oversizeFrameCap })
			c := wiretest.Dial(t, b.Addr(), "big")
			req := kmsg.NewPtrProduceRequest()
			req.Version, req.Acks, req.TimeoutMillis = version, -1, 5000
			req.Topics = []kmsg.ProduceRequestTopic{
				{Topic: "orders", Partitions: []kmsg.ProduceRequestTopicPartition{
					{Partition: 2, Records: batchOfSize(t, 40<<10)},
					{Partition: 0, Records: batchOfSize(t, 100)},
				}},
				{Topic: "payments", Partitions: []kmsg.ProduceRequestTopicPartition{
					{Partition: 0, Records: batchOfSize(t, 56<<10)},
				}},
			}
			raw := formatted(req, 77)
			require.Greater(t, len(raw)-4, oversizeFrameCap)
			require.NoError(t, c.Send(raw))
			require.NoError(t, c.SetDeadline(deadline()))
			frame, err := c.ReadFrame()
			require.NoError(t, err)
			require.Equal(t, int32(77), int32(binary.BigEndian.Uint32(frame)), "the correlation id")
			body := frame[4:]
			if version >= 9 {
				require.Equal(t, byte(0), body[0], "response header v1's empty tags")
				body = body[1:]
			}
			resp := kmsg.NewPtrProduceResponse()
			resp.Version = version
			require.NoError(t, resp.ReadFrom(body))

			type answer struct {
				topic     string
				partition int32
				code      int16
				base, lso int64
			}
			var got []answer
			for _, rt := range resp.Topics {
				for _, rp := range rt.Partitions {
					got = append(got, answer{rt.Topic, rp.Partition, rp.ErrorCode, rp.BaseOffset, rp.LogStartOffset})
					if version < 8 { // the message is a v8 field
						assert.Nil(t, rp.ErrorMessage)
						continue
					}
					require.NotNil(t, rp.ErrorMessage)
					assert.Equal(t, fmt.Sprintf("message too large: the produce request of %d bytes is over the broker's --max-frame-bytes (%d), so it was read and discarded and none of its batches stored",
						len(raw)-4, oversizeFrameCap), *rp.ErrorMessage)
				}
			}
			assert.Equal(t, []answer{
				{"orders", 2, codeMessageTooLarge, -1, -1},
				{"orders", 0, codeMessageTooLarge, -1, -1},
				{"payments", 0, codeMessageTooLarge, -1, -1},
			}, got)

			// The connection goes on, and nothing was stored.
			for _, p := range []struct {
				topic     string
				partition int32
			}{{"orders", 2}, {"orders", 0}, {"payments", 0}} {
				assert.Equal(t, int64(0), listOffset(t, c, 7, p.topic, p.partition, -1).Offset, "%s-%d", p.topic, p.partition)
			}
			assert.Equal(t, int64(0), produceValues(t, c, "orders", 2, "small"), "a produce under the cap is stored")
			assert.Equal(t, int64(1), listOffset(t, c, 7, "orders", 2, -1).Offset)
		})
	}
}

// TestKgoProduceOverMaxFrameBytes: kgo producing a 20 MiB record (its
// batch and buffer limits raised so that it sends it, uncompressed) to a
// broker with the default 16 MiB --max-frame-bytes gets
// kerr.MessageTooLarge from the broker well within its context, not a
// context deadline after retrying for ever; the broker logs it once, and
// the client produces a small record afterwards.
func TestKgoProduceOverMaxFrameBytes(t *testing.T) {
	t.Parallel()
	b := startBroker(t, kgoConfig(map[string]int32{"big": 1}))
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()),
		kgo.ProducerBatchMaxBytes(24<<20), kgo.MaxBufferedBytes(64<<20),
		kgo.ProducerBatchCompression(kgo.NoCompression()))
	require.NoError(t, err)
	t.Cleanup(cl.Close)

	value := make([]byte, 20<<20)
	_, _ = rand.Read(value)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- cl.ProduceSync(ctx, &kgo.Record{Topic: "big", Value: value}).FirstErr() }()
	select {
	case err = <-done:
	case <-ctx.Done():
		t.Fatal("no answer to the 20 MiB record within 2 minutes: the producer retries")
	}
	require.ErrorIs(t, err, kerr.MessageTooLarge)
	require.NoError(t, ctx.Err(), "answered, not timed out")
	assert.Contains(t, err.Error(), "compressed_bytes=", "the broker's answer, not kgo's own check")
	logged := b.Logs.Find("request over --max-frame-bytes, read and discarded, answered MESSAGE_TOO_LARGE")
	require.Len(t, logged, 1)
	assert.Equal(t, "Produce", logged[0].Attrs["api"])
	assert.Equal(t, "16777216", logged[0].Attrs["max_frame_bytes"])
	assert.True(t, strings.HasPrefix(logged[0].Attrs["remote"], "127.0.0.1:"))

	res := cl.ProduceSync(ctx, &kgo.Record{Topic: "big", Value: []byte("small")})
	require.NoError(t, res.FirstErr(), "the client goes on")
}
