package lab

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/wireclient"
)

// EnsureTopics makes sure the broker at addr has each topic with exactly
// the given partition count: it asks Metadata, creates the topics that are
// missing with CreateTopics, and fails for one that exists with another
// partition count.
func EnsureTopics(ctx context.Context, addr string, topics map[string]int32) error {
	conn, err := wireclient.Dial(ctx, addr, "lab")
	if err != nil {
		return err
	}
	defer conn.Close()

	names := slices.Sorted(maps.Keys(topics))
	meta := kmsg.NewPtrMetadataRequest()
	meta.Version = 12
	for _, name := range names {
		t := kmsg.NewMetadataRequestTopic()
		t.Topic = kmsg.StringPtr(name)
		meta.Topics = append(meta.Topics, t)
	}
	metaResp, err := Request[*kmsg.MetadataResponse](ctx, conn, meta)
	if err != nil {
		return err
	}
	create := kmsg.NewPtrCreateTopicsRequest()
	create.Version = 7
	create.TimeoutMillis = 5000
	for _, t := range metaResp.Topics {
		if t.Topic == nil {
			continue
		}
		want, ok := topics[*t.Topic]
		switch {
		case !ok:
		case t.ErrorCode == kerr.UnknownTopicOrPartition.Code:
			ct := kmsg.NewCreateTopicsRequestTopic()
			ct.Topic, ct.NumPartitions, ct.ReplicationFactor = *t.Topic, want, -1
			create.Topics = append(create.Topics, ct)
		case t.ErrorCode != 0:
			return fmt.Errorf("lab: topic %s: Metadata answered %s", *t.Topic, CodeName(t.ErrorCode))
		case int32(len(t.Partitions)) != want:
			return fmt.Errorf("lab: topic %s has %d partitions, the lab needs %d", *t.Topic, len(t.Partitions), want)
		}
	}
	if len(create.Topics) == 0 {
		return nil
	}
	createResp, err := Request[*kmsg.CreateTopicsResponse](ctx, conn, create)
	if err != nil {
		return err
	}
	for _, t := range createResp.Topics {
		if t.ErrorCode != 0 && t.ErrorCode != kerr.TopicAlreadyExists.Code {
			return fmt.Errorf("lab: create topic %s: %s", t.Topic, CodeName(t.ErrorCode))
		}
	}
	return nil
}
