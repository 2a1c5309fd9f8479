package wiretest

import (
	"encoding/binary"
	"io"
	"net"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// serveOnce accepts one connection on a loopback port and hands it to
// handle, then closes it.
func serveOnce(t *testing.T, handle func(net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	done := make(chan struct{})
	go func() {
		defer close(done)
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		defer conn.Close()
		handle(conn)
	}()
	t.Cleanup(func() {
		ln.Close()
		<-done
	})
	return ln.Addr().String()
}

func TestDialDo(t *testing.T) {
	t.Parallel()
	addr := serveOnce(t, func(conn net.Conn) {
		var size [4]byte
		if _, err := io.ReadFull(conn, size[:]); err != nil {
			return
		}
		frame := make([]byte, binary.BigEndian.Uint32(size[:]))
		if _, err := io.ReadFull(conn, frame); err != nil {
			return
		}
		resp := kmsg.NewApiVersionsResponse()
		resp.ErrorCode = 35
		body := append(append([]byte{}, frame[4:8]...), resp.AppendTo(nil)...) // header v0: the correlation id
		_, _ = conn.Write(append(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body...))
	})
	c := Dial(t, addr, "wiretest")
	resp := Do[*kmsg.ApiVersionsResponse](t, c, kmsg.NewPtrApiVersionsRequest())
	assert.Equal(t, int16(35), resp.ErrorCode)
	RequireClosed(t, c)
}

func TestCommitCodes(t *testing.T) {
	t.Parallel()
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Topics = []kmsg.OffsetCommitRequestTopic{
		{Topic: "orders", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 2}, {Partition: 0}}},
		{Topic: "payments", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0}}},
	}
	resp := kmsg.NewPtrOffsetCommitResponse()
	resp.Topics = []kmsg.OffsetCommitResponseTopic{
		{Topic: "orders", Partitions: []kmsg.OffsetCommitResponseTopicPartition{{Partition: 2, ErrorCode: 22}, {Partition: 0}}},
		{Topic: "payments", Partitions: []kmsg.OffsetCommitResponseTopicPartition{{Partition: 0, ErrorCode: 25}}},
	}
	assert.Equal(t, []int16{22, 0, 25}, CommitCodes(t, req, resp))
}

func TestFetchedOffsets(t *testing.T) {
	t.Parallel()
	meta := "m"
	topics := []kmsg.OffsetFetchResponseTopic{{Topic: "orders", Partitions: []kmsg.OffsetFetchResponseTopicPartition{
		{Partition: 0, Offset: 10, LeaderEpoch: 3, Metadata: &meta}, {Partition: 1, Offset: -1, LeaderEpoch: -1, ErrorCode: 3},
	}}}
	want := []Offset{
		{Topic: "orders", Partition: 0, Offset: 10, LeaderEpoch: 3, Metadata: "m"},
		{Topic: "orders", Partition: 1, Offset: -1, LeaderEpoch: -1, ErrorCode: 3},
	}
	assert.Equal(t, want, FetchedOffsets(topics))
	group := []kmsg.OffsetFetchResponseGroupTopic{{Topic: "orders", Partitions: []kmsg.OffsetFetchResponseGroupTopicPartition{
		{Partition: 0, Offset: 10, LeaderEpoch: 3, Metadata: &meta}, {Partition: 1, Offset: -1, LeaderEpoch: -1, ErrorCode: 3},
	}}}
	assert.Equal(t, want, FetchedGroupOffsets(group))
	assert.Equal(t, []Offset{}, FetchedOffsets(nil), "no partition is an empty list, not nil")
}

func TestAssignment(t *testing.T) {
	t.Parallel()
	a := kmsg.NewConsumerMemberAssignment()
	a.Topics = []kmsg.ConsumerMemberAssignmentTopic{{Topic: "orders", Partitions: []int32{1, 3}}, {Topic: "payments", Partitions: []int32{0}}}
	assert.Equal(t, []string{"orders-1", "orders-3", "payments-0"}, Assignment(t, a.AppendTo(nil)))
	none := kmsg.NewConsumerMemberAssignment()
	assert.Equal(t, []string{}, Assignment(t, none.AppendTo(nil)))
	var empty kmsg.ConsumerMemberAssignment
	assert.Error(t, empty.ReadFrom(nil), "zero bytes fail Assignment")
}
