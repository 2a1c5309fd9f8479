package lab

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/assignor"
)

// partitionConsumer is one of the partition lab's stock kgo consumers: it
// processes every record it polls (notes it) and commits only when the
// lab says so.
type partitionConsumer struct {
	name string // "A" or "B"
	cl   *kgo.Client
	done chan struct{} // closed when the poll loop ends
	// committing is signaled each time an OffsetCommit is written to a
	// connection (kgo.HookBrokerWrite).
	committing chan struct{}

	mu        sync.Mutex
	assigned  map[assignor.TopicPartition]bool // guarded by mu: what kgo's callbacks say it owns
	processed map[int32]map[int64]string       // guarded by mu: partition -> offset -> value
	topic     string
}

// startPartitionConsumer starts a consumer with client id (and so member
// id prefix) id in group, and polls it until close.
func startPartitionConsumer(ctx context.Context, addr, id, group, topic string, session time.Duration) (*partitionConsumer, error) {
	m := &partitionConsumer{name: map[string]string{"a": "A", "b": "B"}[id], done: make(chan struct{}), committing: make(chan struct{}, 1), topic: topic,
		assigned: map[assignor.TopicPartition]bool{}, processed: map[int32]map[int64]string{}}
	set := func(own bool) func(context.Context, *kgo.Client, map[string][]int32) {
		return func(_ context.Context, _ *kgo.Client, ps map[string][]int32) {
			m.mu.Lock()
			defer m.mu.Unlock()
			for t, parts := range ps {
				for _, p := range parts {
					if own {
						m.assigned[TP(t, p)] = true
					} else {
						delete(m.assigned, TP(t, p))
					}
				}
			}
		}
	}
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(addr),
		kgo.ClientID(id),
		kgo.ConsumerGroup(group),
		kgo.ConsumeTopics(topic),
		kgo.Balancers(kgo.RoundRobinBalancer()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.DisableAutoCommit(),
		kgo.SessionTimeout(session),
		kgo.HeartbeatInterval(partitionHeartbeat),
		kgo.FetchMaxWait(100*time.Millisecond),
		kgo.RequestTimeoutOverhead(partitionRequestTimeout),
		kgo.RetryTimeout(partitionRetryTimeout),
		kgo.RetryBackoffFn(func(int) time.Duration { return 50 * time.Millisecond }),
		kgo.WithHooks(m),
		kgo.OnPartitionsAssigned(set(true)),
		kgo.OnPartitionsRevoked(set(false)),
		kgo.OnPartitionsLost(set(false)),
	)
	if err != nil {
		return nil, err
	}
	m.cl = cl
	go m.poll(context.WithoutCancel(ctx))
	return m, nil
}

// OnBrokerWrite implements kgo.HookBrokerWrite: it signals committing
// when an OffsetCommit has been written.
func (m *partitionConsumer) OnBrokerWrite(_ kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, err error) {
	if key == int16(kmsg.OffsetCommit) && err == nil {
		select {
		case m.committing <- struct{}{}:
		default:
		}
	}
}

// poll processes every record polled until the client closes.
func (m *partitionConsumer) poll(ctx context.Context) {
	defer close(m.done)
	for {
		fetches := m.cl.PollFetches(ctx)
		if fetches.IsClientClosed() {
			return
		}
		fetches.EachRecord(func(r *kgo.Record) {
			m.mu.Lock()
			defer m.mu.Unlock()
			if m.processed[r.Partition] == nil {
				m.processed[r.Partition] = map[int64]string{}
			}
			m.processed[r.Partition][r.Offset] = string(r.Value)
		})
	}
}

// owned returns the partitions the consumer believes it owns, sorted.
func (m *partitionConsumer) owned() []assignor.TopicPartition {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.SortedFunc(maps.Keys(m.assigned), func(a, b assignor.TopicPartition) int {
		return int(a.Partition - b.Partition)
	})
}

// waitOwns waits until the consumer owns exactly want.
func (m *partitionConsumer) waitOwns(ctx context.Context, want ...assignor.TopicPartition) error {
	if err := poll(ctx, func() bool { return slices.Equal(m.owned(), want) }); err != nil {
		return fmt.Errorf("lab partition: %s owns %s, want %s: %w", m.name, Partitions(m.owned()), Partitions(want), err)
	}
	return nil
}

// waitProcessed waits until the consumer has processed offsets up to n-1
// of a partition.
func (m *partitionConsumer) waitProcessed(ctx context.Context, partition int32, n int64) error {
	err := poll(ctx, func() bool {
		m.mu.Lock()
		defer m.mu.Unlock()
		_, ok := m.processed[partition][n-1]
		return ok
	})
	if err != nil {
		return fmt.Errorf("lab partition: %s did not process %s up to offset %d: %w", m.name, TP(m.topic, partition), n-1, err)
	}
	return nil
}

// processedAt returns the value the consumer processed at an offset.
func (m *partitionConsumer) processedAt(partition int32, offset int64) (string, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	v, ok := m.processed[partition][offset]
	return v, ok
}

// commit commits offset for one partition as kgo's group member does
// (its member id and generation) and returns the partition's code.
func (m *partitionConsumer) commit(ctx context.Context, topic string, partition int32, offset int64) (int16, error) {
	ctx, cancel := context.WithTimeout(ctx, partitionWait)
	defer cancel()
	var code int16
	var failed error
	m.cl.CommitOffsetsSync(ctx, map[string]map[int32]kgo.EpochOffset{topic: {partition: {Epoch: -1, Offset: offset}}},
		func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
			if err != nil {
				failed = err
				return
			}
			code = resp.Topics[0].Partitions[0].ErrorCode
		})
	if failed != nil {
		return 0, fmt.Errorf("lab partition: %s's commit: %w", m.name, failed)
	}
	return code, nil
}

// close closes the client and waits for the poll loop.
func (m *partitionConsumer) close() {
	m.cl.Close()
	<-m.done
}
