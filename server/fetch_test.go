package server

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func fetchRequest(version int16, maxWait time.Duration, topic string, partitions ...int32) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.Version, req.MaxWaitMillis = version, int32(maxWait/time.Millisecond)
	ft := kmsg.FetchRequestTopic{Topic: topic}
	for _, p := range partitions {
		fp := kmsg.NewFetchRequestTopicPartition()
		fp.Partition, fp.FetchOffset = p, 42
		ft.Partitions = append(ft.Partitions, fp)
	}
	req.Topics = []kmsg.FetchRequestTopic{ft}
	return req
}

func TestFetchWaitsAndAnswersEmpty(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	start := time.Now()
	resp := call[*kmsg.FetchResponse](e, "c", fetchRequest(12, 30*time.Millisecond, "orders", 0, 3))
	assert.GreaterOrEqual(t, time.Since(start), 30*time.Millisecond, "waits its MaxWait")
	assert.Zero(t, resp.ErrorCode)
	assert.Zero(t, resp.SessionID, "no fetch sessions")
	require.Len(t, resp.Topics, 1)
	require.Len(t, resp.Topics[0].Partitions, 2)
	for _, p := range resp.Topics[0].Partitions {
		assert.Zero(t, p.ErrorCode, "any fetch offset is fine: no OFFSET_OUT_OF_RANGE")
		assert.Equal(t, int64(0), p.HighWatermark)
		assert.Equal(t, int64(0), p.LastStableOffset)
		assert.Equal(t, int64(0), p.LogStartOffset)
		assert.Empty(t, p.RecordBatches)
	}
}

func TestFetchUnknownPartitionDoesNotWait(t *testing.T) {
	t.Parallel()
	e := newEnvWith(t, envOptions{config: func(cfg *Config) { cfg.MaxFetchWait = time.Minute }})
	start := time.Now()
	resp := call[*kmsg.FetchResponse](e, "c", fetchRequest(4, time.Minute, "orders", 0, 4))
	assert.Less(t, time.Since(start), 10*time.Second)
	ps := resp.Topics[0].Partitions
	assert.Zero(t, ps[0].ErrorCode)
	assert.Equal(t, kerr.UnknownTopicOrPartition.Code, ps[1].ErrorCode)
	assert.Equal(t, int64(-1), ps[1].HighWatermark)
	resp = call[*kmsg.FetchResponse](e, "c", fetchRequest(4, time.Minute, "nope", 0))
	assert.Equal(t, kerr.UnknownTopicOrPartition.Code, resp.Topics[0].Partitions[0].ErrorCode)
}

func TestFetchWaitIsCapped(t *testing.T) {
	t.Parallel()
	e := newEnvWith(t, envOptions{config: func(cfg *Config) { cfg.MaxFetchWait = 20 * time.Millisecond }})
	start := time.Now()
	call[*kmsg.FetchResponse](e, "c", fetchRequest(12, time.Minute, "orders", 0))
	elapsed := time.Since(start)
	assert.GreaterOrEqual(t, elapsed, 20*time.Millisecond)
	assert.Less(t, elapsed, 10*time.Second, "MaxFetchWait caps MaxWaitMillis")

	start = time.Now()
	req := fetchRequest(12, 0, "orders", 0)
	req.MaxWaitMillis = -5
	call[*kmsg.FetchResponse](e, "c", req)
	assert.Less(t, time.Since(start), 10*time.Second, "a negative wait is none")
}

func TestFetchEndsOnShutdown(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx, cancel := context.WithCancel(t.Context())
	r := e.req("c", 12)
	r.ctx = ctx
	done := make(chan kmsg.Response, 1)
	go func() { done <- e.srv.handleFetch(r, fetchRequest(12, time.Minute, "orders", 0)) }()
	cancel()
	select {
	case resp := <-done:
		assert.Zero(t, resp.(*kmsg.FetchResponse).Topics[0].Partitions[0].ErrorCode)
	case <-time.After(testTimeout):
		t.Fatal("fetch kept waiting after shutdown")
	}
}
