package server

import (
	"errors"
	"log/slog"
	"maps"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// recordingSaver is a TopicSaver that keeps every save, or fails them.
type recordingSaver struct {
	mu    sync.Mutex
	saves []map[string]int32 // guarded by mu
	err   error
}

func (s *recordingSaver) SaveTopics(topics map[string]int32) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.saves = append(s.saves, maps.Clone(topics))
	return s.err
}

func (s *recordingSaver) saved() []map[string]int32 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.saves
}

func createTopic(name string, partitions int32, rf int16) kmsg.CreateTopicsRequestTopic {
	t := kmsg.NewCreateTopicsRequestTopic()
	t.Topic, t.NumPartitions, t.ReplicationFactor = name, partitions, rf
	return t
}

func createRequest(version int16, validateOnly bool, topics ...kmsg.CreateTopicsRequestTopic) *kmsg.CreateTopicsRequest {
	req := kmsg.NewPtrCreateTopicsRequest()
	req.Version, req.ValidateOnly, req.Topics = version, validateOnly, topics
	return req
}

func TestCreateTopics(t *testing.T) {
	t.Parallel()
	withAssignment := createTopic("assigned", -1, -1)
	withAssignment.ReplicaAssignment = []kmsg.CreateTopicsRequestTopicReplicaAssignment{{Partition: 0, Replicas: []int32{0}}, {Partition: 1, Replicas: []int32{0}}}
	badAssignment := createTopic("assigned", 2, -1)
	badAssignment.ReplicaAssignment = withAssignment.ReplicaAssignment

	tests := []struct {
		name           string
		topic          kmsg.CreateTopicsRequestTopic
		wantCode       int16
		wantPartitions int32
	}{
		{"new", createTopic("events", 3, 1), 0, 3},
		{"defaults", createTopic("events", -1, -1), 0, 1},
		{"manual assignment", withAssignment, 0, 2},
		{"manual assignment with counts", badAssignment, kerr.InvalidRequest.Code, -1},
		{"exists", createTopic("orders", 3, 1), kerr.TopicAlreadyExists.Code, -1},
		{"replication factor 3", createTopic("events", 3, 3), kerr.InvalidReplicationFactor.Code, -1},
		{"replication factor 0", createTopic("events", 3, 0), kerr.InvalidReplicationFactor.Code, -1},
		{"zero partitions", createTopic("events", 0, 1), kerr.InvalidPartitions.Code, -1},
		{"negative partitions", createTopic("events", -2, 1), kerr.InvalidPartitions.Code, -1},
		{"bad name", createTopic("no/slash", 1, 1), kerr.InvalidTopicException.Code, -1},
		{"dot", createTopic(".", 1, 1), kerr.InvalidTopicException.Code, -1},
		{"empty name", createTopic("", 1, 1), kerr.InvalidTopicException.Code, -1},
	}
	for _, tc := range tests {
		for _, validateOnly := range []bool{false, true} {
			name := tc.name
			if validateOnly {
				name += " validate only"
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				saver := &recordingSaver{}
				e := newEnvWith(t, envOptions{config: func(cfg *Config) { cfg.Topics = saver }})
				before := e.coord.Topics()
				resp := call[*kmsg.CreateTopicsResponse](e, "c", createRequest(7, validateOnly, tc.topic))
				require.Len(t, resp.Topics, 1)
				rt := resp.Topics[0]
				assert.Equal(t, tc.topic.Topic, rt.Topic)
				assert.Equal(t, tc.wantCode, rt.ErrorCode)
				assert.Equal(t, tc.wantPartitions, rt.NumPartitions)
				assert.Empty(t, e.logs.atLevel(slog.LevelError), "a client's mistake is not our failure")
				if tc.wantCode != 0 {
					require.NotNil(t, rt.ErrorMessage)
					assert.Equal(t, int16(-1), rt.ReplicationFactor)
					assert.Equal(t, before, e.coord.Topics())
					assert.Empty(t, saver.saved())
					return
				}
				assert.Nil(t, rt.ErrorMessage)
				assert.Equal(t, int16(1), rt.ReplicationFactor)
				if validateOnly {
					assert.Equal(t, before, e.coord.Topics(), "validate only creates nothing")
					assert.Empty(t, saver.saved())
					return
				}
				after := e.coord.Topics()
				assert.Equal(t, tc.wantPartitions, after[tc.topic.Topic])
				assert.Equal(t, []map[string]int32{after}, saver.saved(), "the catalog is saved once, whole")
			})
		}
	}
}

func TestCreateTopicsBatch(t *testing.T) {
	t.Parallel()
	saver := &recordingSaver{}
	e := newEnvWith(t, envOptions{config: func(cfg *Config) { cfg.Topics = saver }})
	resp := call[*kmsg.CreateTopicsResponse](e, "c", createRequest(4, false,
		createTopic("a", 1, 1), createTopic("dup", 1, 1), createTopic("b", 0, 1), createTopic("dup", 2, 1), createTopic("c", 2, -1)))
	var codes []int16
	for _, rt := range resp.Topics {
		codes = append(codes, rt.ErrorCode)
	}
	assert.Equal(t, []int16{0, kerr.InvalidRequest.Code, kerr.InvalidPartitions.Code, kerr.InvalidRequest.Code, 0}, codes,
		"a name given twice is INVALID_REQUEST for both, as Kafka")
	assert.Equal(t, map[string]int32{"orders": 4, "payments": 1, "a": 1, "c": 2}, e.coord.Topics())
	require.Len(t, saver.saved(), 1)
}

func TestCreateTopicsSaveFailure(t *testing.T) {
	t.Parallel()
	saver := &recordingSaver{err: errors.New("disk full")}
	e := newEnvWith(t, envOptions{config: func(cfg *Config) { cfg.Topics = saver }})
	resp := call[*kmsg.CreateTopicsResponse](e, "c", createRequest(7, false, createTopic("a", 1, 1), createTopic("orders", 1, 1)))
	assert.Equal(t, kerr.KafkaStorageError.Code, resp.Topics[0].ErrorCode, "created but not saved")
	assert.Equal(t, kerr.TopicAlreadyExists.Code, resp.Topics[1].ErrorCode, "its own error kept")
	logged := e.logs.find("saving topic catalog failed")
	require.Len(t, logged, 1)
	assert.Equal(t, slog.LevelError, logged[0].level)
}

func TestCreateTopicsWithoutSaver(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	resp := call[*kmsg.CreateTopicsResponse](e, "c", createRequest(0, false, createTopic("a", 2, 1)))
	assert.Zero(t, resp.Topics[0].ErrorCode)
	assert.Equal(t, int32(2), e.coord.Topics()["a"])
}
