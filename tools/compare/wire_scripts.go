package compare

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"syscall"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/tools/lab"
	"github.com/minibroker/minibroker/wireclient"
)

// apiVersionsUnsupported: an ApiVersions request at a version no broker
// serves (KIP-511), then a supported one on the same connection.
func apiVersionsUnsupported(ctx context.Context, s *Script) (string, error) {
	conn, err := wireclient.Dial(ctx, s.addr, "compare")
	if err != nil {
		return "", err
	}
	defer conn.Close()
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = 99
	resp, err := conn.Request(ctx, req)
	if err != nil {
		return closedOr(err)
	}
	av := resp.(*kmsg.ApiVersionsResponse)
	answer := lab.CodeName(av.ErrorCode)
	if len(av.ApiKeys) == 1 && av.ApiKeys[0].ApiKey == int16(kmsg.ApiVersions) {
		answer += ", v0 body with its range"
	}
	again := kmsg.NewPtrApiVersionsRequest()
	again.Version = 3
	again.ClientSoftwareName, again.ClientSoftwareVersion = "compare", "1.0"
	if resp, err = conn.Request(ctx, again); err != nil {
		return answer + "; then " + errClosed.Error(), nil
	}
	if code := resp.(*kmsg.ApiVersionsResponse).ErrorCode; code != 0 {
		return answer + "; then " + lab.CodeName(code), nil
	}
	return answer + "; stays open", nil
}

// unsupportedVersion: a Heartbeat at a version neither broker serves.
// Kafka closes the connection without an answer.
func unsupportedVersion(ctx context.Context, s *Script) (string, error) {
	conn, err := wireclient.Dial(ctx, s.addr, "compare")
	if err != nil {
		return "", err
	}
	defer conn.Close()
	req := kmsg.NewPtrHeartbeatRequest()
	req.Version = 5
	req.Group, req.MemberID = s.group, "compare-ghost"
	resp, err := conn.Request(ctx, req)
	if err != nil {
		return closedOr(err)
	}
	return "answered " + lab.CodeName(resp.(*kmsg.HeartbeatResponse).ErrorCode), nil
}

// closedOr reports a connection the broker closed as errClosed's text and
// any other failure as an error.
func closedOr(err error) (string, error) {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) {
		return errClosed.Error(), nil
	}
	return "", err
}

// rawConn dials the script's broker for requests outside any member.
func (s *Script) rawConn(ctx context.Context) (*wireclient.Client, error) {
	return wireclient.Dial(ctx, s.addr, "compare")
}

// listedState returns group's state as ListGroups v4 reports it, or
// "(absent)".
func listedState(ctx context.Context, addr, group string) (string, error) {
	conn, err := wireclient.Dial(ctx, addr, "compare")
	if err != nil {
		return "", err
	}
	defer conn.Close()
	req := kmsg.NewPtrListGroupsRequest()
	req.Version = 4
	resp, err := lab.Request[*kmsg.ListGroupsResponse](ctx, conn, req)
	if err != nil {
		return "", err
	}
	for _, g := range resp.Groups {
		if g.Group == group {
			return g.GroupState, nil
		}
	}
	return "(absent)", nil
}

// findCoordinator: FindCoordinator v4 for the script's group, and Metadata
// v12 for orders.
func findCoordinator(ctx context.Context, s *Script) (string, error) {
	conn, err := s.rawConn(ctx)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	find := kmsg.NewPtrFindCoordinatorRequest()
	find.Version = 4
	find.CoordinatorKeys = []string{s.group}
	found, err := lab.Request[*kmsg.FindCoordinatorResponse](ctx, conn, find)
	if err != nil {
		return "", err
	}
	if len(found.Coordinators) != 1 || found.Coordinators[0].Key != s.group {
		return "", fmt.Errorf("FindCoordinator answered %d coordinators for one key", len(found.Coordinators))
	}
	c := found.Coordinators[0]
	answer := lab.CodeName(c.ErrorCode) + ", coordinator "
	if net.JoinHostPort(c.Host, strconv.Itoa(int(c.Port))) == s.addr {
		answer += "here"
	} else {
		answer += "elsewhere"
	}

	meta := kmsg.NewPtrMetadataRequest()
	meta.Version = 12
	topic := kmsg.NewMetadataRequestTopic()
	topic.Topic = kmsg.StringPtr(s.topic("orders"))
	meta.Topics = []kmsg.MetadataRequestTopic{topic}
	md, err := lab.Request[*kmsg.MetadataResponse](ctx, conn, meta)
	if err != nil {
		return "", err
	}
	if len(md.Topics) != 1 {
		return "", fmt.Errorf("the Metadata answer holds %d topics, want one", len(md.Topics))
	}
	led := 0
	for _, p := range md.Topics[0].Partitions {
		if p.Leader == c.NodeID {
			led++
		}
	}
	return fmt.Sprintf("%s; orders: %d partitions, %d led here", answer, len(md.Topics[0].Partitions), led), nil
}

// pipelinedInOrder: four different requests written at once on one
// connection; wireclient.Client checks each answer's correlation id.
func pipelinedInOrder(ctx context.Context, s *Script) (string, error) {
	conn, err := s.rawConn(ctx)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	versions := kmsg.NewPtrApiVersionsRequest()
	versions.Version = 3
	versions.ClientSoftwareName, versions.ClientSoftwareVersion = "compare", "1.0"
	heartbeat := kmsg.NewPtrHeartbeatRequest()
	heartbeat.Version = lab.HeartbeatVersion
	heartbeat.Group, heartbeat.MemberID = s.group, "compare-ghost"
	meta := kmsg.NewPtrMetadataRequest()
	meta.Version = 12
	describe := kmsg.NewPtrDescribeGroupsRequest()
	describe.Version = lab.DescribeGroupsVersion
	describe.Groups = []string{s.group}
	resps, err := conn.Pipeline(ctx, []kmsg.Request{versions, heartbeat, meta, describe})
	if err != nil {
		return closedOr(err)
	}
	return fmt.Sprintf("%d answers, in request order", len(resps)), nil
}

// listOffsetsAndFetch: the earliest and latest offsets of orders-0, and a
// Fetch from offset 0 that may wait 10 ms.
func listOffsetsAndFetch(ctx context.Context, s *Script) (string, error) {
	conn, err := s.rawConn(ctx)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	var offsets [2]int64
	for i, ts := range []int64{-2, -1} { // earliest, latest
		req := kmsg.NewPtrListOffsetsRequest()
		req.Version = 7
		req.ReplicaID = -1
		t := kmsg.NewListOffsetsRequestTopic()
		t.Topic = s.topic("orders")
		p := kmsg.NewListOffsetsRequestTopicPartition()
		p.Partition, p.Timestamp = 0, ts
		t.Partitions = []kmsg.ListOffsetsRequestTopicPartition{p}
		req.Topics = []kmsg.ListOffsetsRequestTopic{t}
		resp, err := lab.Request[*kmsg.ListOffsetsResponse](ctx, conn, req)
		if err != nil {
			return "", err
		}
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			return "", errors.New("the ListOffsets answer lacks orders-0")
		}
		rp := resp.Topics[0].Partitions[0]
		if rp.ErrorCode != 0 {
			return "ListOffsets " + lab.CodeName(rp.ErrorCode), nil
		}
		offsets[i] = rp.Offset
	}

	req := kmsg.NewPtrFetchRequest()
	req.Version = 12
	req.ReplicaID = -1
	req.MaxWaitMillis, req.MinBytes, req.MaxBytes = 10, 1, 1<<20
	req.SessionEpoch = -1
	t := kmsg.NewFetchRequestTopic()
	t.Topic = s.topic("orders")
	p := kmsg.NewFetchRequestTopicPartition()
	p.Partition, p.FetchOffset, p.PartitionMaxBytes = 0, 0, 1<<20
	t.Partitions = []kmsg.FetchRequestTopicPartition{p}
	req.Topics = []kmsg.FetchRequestTopic{t}
	resp, err := lab.Request[*kmsg.FetchResponse](ctx, conn, req)
	if err != nil {
		return "", err
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return "", errors.New("the Fetch answer lacks orders-0")
	}
	fp := resp.Topics[0].Partitions[0]
	records := "no records"
	if len(fp.RecordBatches) > 0 {
		records = fmt.Sprintf("%d bytes of records", len(fp.RecordBatches))
	}
	return fmt.Sprintf("offsets %d..%d; Fetch %s, high watermark %d, %s",
		offsets[0], offsets[1], lab.CodeName(fp.ErrorCode), fp.HighWatermark, records), nil
}
