// Package wiretest holds the helpers of tests that speak the Kafka wire
// to a broker through a raw wireclient.Client, one of each, for the
// server's in-package tests, the integration tests, the broker's and the
// labs' tests:
//
//   - Dial: a client to an address, closed when the test ends;
//   - Do: one request and its typed response, failing the test on a
//     transport error;
//   - RequireClosed: the broker closes the connection;
//   - CommitCodes, Commit: an OffsetCommit's codes in request order;
//   - FetchedOffsets, FetchedGroupOffsets: an OffsetFetch's partitions
//     flattened for comparison;
//   - Assignment: ConsumerMemberAssignment bytes as "topic-partition"s.
//
// It is imported only by _test.go files (scripts/boundaries.sh checks). Of
// this module it imports only wireclient, so that the in-package tests of
// server/ and broker/ can use it without an import cycle.
package wiretest

import (
	"context"
	"errors"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/wireclient"
)

// Timeout bounds every dial, request and wait for a close.
const Timeout = 10 * time.Second

// Dial opens a raw client to addr with clientID; cleanup closes it.
func Dial(t testing.TB, addr, clientID string) *wireclient.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), Timeout)
	defer cancel()
	c, err := wireclient.Dial(ctx, addr, clientID)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

// Do sends req on c and returns its typed response. A transport error, or
// a response of another type than R, fails the test.
func Do[R kmsg.Response](t testing.TB, c *wireclient.Client, req kmsg.Request) R {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), Timeout)
	defer cancel()
	resp, err := c.Request(ctx, req)
	require.NoError(t, err, "%s v%d", kmsg.NameForKey(req.Key()), req.GetVersion())
	typed, ok := resp.(R)
	require.True(t, ok, "response type %T", resp)
	return typed
}

// RequireClosed waits for the broker to close c: the next read sees EOF
// (or a reset), never a frame and never the deadline.
func RequireClosed(t testing.TB, c *wireclient.Client) {
	t.Helper()
	require.NoError(t, c.SetDeadline(time.Now().Add(Timeout)))
	frame, err := c.ReadFrame()
	require.Error(t, err, "the broker must close the connection; got frame %x", frame)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("the broker did not close the connection within %v", Timeout)
	}
	require.True(t, errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		strings.Contains(err.Error(), "connection reset"), "want EOF, got %v", err)
}

// CommitCodes returns the code of every partition of resp in the order
// req names them, after checking that resp names every requested topic
// and partition, in that order.
func CommitCodes(t testing.TB, req *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse) []int16 {
	t.Helper()
	require.Len(t, resp.Topics, len(req.Topics), "every requested topic is answered")
	var codes []int16
	for i, rt := range req.Topics {
		require.Equal(t, rt.Topic, resp.Topics[i].Topic)
		require.Len(t, resp.Topics[i].Partitions, len(rt.Partitions), "every requested partition is answered")
		for j, p := range rt.Partitions {
			require.Equal(t, p.Partition, resp.Topics[i].Partitions[j].Partition)
			codes = append(codes, resp.Topics[i].Partitions[j].ErrorCode)
		}
	}
	return codes
}

// Commit sends req on c and returns its CommitCodes.
func Commit(t testing.TB, c *wireclient.Client, req *kmsg.OffsetCommitRequest) []int16 {
	t.Helper()
	return CommitCodes(t, req, Do[*kmsg.OffsetCommitResponse](t, c, req))
}

// Offset is one partition of an OffsetFetch answer, flattened for
// comparison; a null metadata is "".
type Offset struct {
	Topic       string
	Partition   int32
	Offset      int64
	LeaderEpoch int32
	Metadata    string
	ErrorCode   int16
}

// FetchedOffsets flattens the topics of an OffsetFetch answer (v0-7) in
// the order the answer lists them.
func FetchedOffsets(topics []kmsg.OffsetFetchResponseTopic) []Offset {
	out := []Offset{}
	for _, rt := range topics {
		for _, p := range rt.Partitions {
			out = append(out, offset(rt.Topic, p.Partition, p.Offset, p.LeaderEpoch, p.Metadata, p.ErrorCode))
		}
	}
	return out
}

// FetchedGroupOffsets flattens the topics of one group of an OffsetFetch
// answer (v8+) in the order the answer lists them.
func FetchedGroupOffsets(topics []kmsg.OffsetFetchResponseGroupTopic) []Offset {
	out := []Offset{}
	for _, rt := range topics {
		for _, p := range rt.Partitions {
			out = append(out, offset(rt.Topic, p.Partition, p.Offset, p.LeaderEpoch, p.Metadata, p.ErrorCode))
		}
	}
	return out
}

func offset(topic string, partition int32, at int64, epoch int32, metadata *string, code int16) Offset {
	o := Offset{Topic: topic, Partition: partition, Offset: at, LeaderEpoch: epoch, ErrorCode: code}
	if metadata != nil {
		o.Metadata = *metadata
	}
	return o
}

// Assignment parses ConsumerMemberAssignment bytes (SyncGroup's,
// DescribeGroups') into "topic-partition" strings in the order they list
// them, failing the test on bytes kgo could not parse (zero bytes
// included).
func Assignment(t testing.TB, raw []byte) []string {
	t.Helper()
	var a kmsg.ConsumerMemberAssignment
	require.NoError(t, a.ReadFrom(raw), "assignment bytes %x", raw)
	out := []string{}
	for _, topic := range a.Topics {
		for _, p := range topic.Partitions {
			out = append(out, topic.Topic+"-"+strconv.Itoa(int(p)))
		}
	}
	return out
}
