package server

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/catalog"
	"github.com/minibroker/minibroker/records"
	"github.com/minibroker/minibroker/testkit/wiretest"
)

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
				e := newEnvWith(t, envOptions{catalog: catalog.Config{Dir: t.TempDir()}})
				before := e.cat.List()
				saved := readCatalog(t, e.cat)
				resp := call[*kmsg.CreateTopicsResponse](e, "c", createRequest(7, validateOnly, tc.topic))
				require.Len(t, resp.Topics, 1)
				rt := resp.Topics[0]
				assert.Equal(t, tc.topic.Topic, rt.Topic)
				assert.Equal(t, tc.wantCode, rt.ErrorCode)
				assert.Equal(t, tc.wantPartitions, rt.NumPartitions)
				assert.Empty(t, e.logs.AtLevel(slog.LevelError), "a client's mistake is not our failure")
				if tc.wantCode != 0 {
					require.NotNil(t, rt.ErrorMessage)
					assert.Equal(t, int16(-1), rt.ReplicationFactor)
					assert.Equal(t, before, e.cat.List())
					assert.Equal(t, saved, readCatalog(t, e.cat))
					return
				}
				assert.Nil(t, rt.ErrorMessage)
				assert.Equal(t, int16(1), rt.ReplicationFactor)
				if validateOnly {
					assert.Equal(t, before, e.cat.List(), "validate only creates nothing")
					assert.Equal(t, saved, readCatalog(t, e.cat))
					return
				}
				n, ok := e.cat.Partitions(tc.topic.Topic)
				assert.True(t, ok)
				assert.Equal(t, tc.wantPartitions, n)
				assert.Contains(t, readCatalog(t, e.cat), fmt.Sprintf(`{"topic":%q,"partitions":%d,`, tc.topic.Topic, tc.wantPartitions), "saved in the data dir")
			})
		}
	}
}

func TestCreateTopicsBatch(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	resp := call[*kmsg.CreateTopicsResponse](e, "c", createRequest(4, false,
		createTopic("a", 1, 1), createTopic("dup", 1, 1), createTopic("b", 0, 1), createTopic("dup", 2, 1), createTopic("c", 2, -1)))
	var codes []int16
	for _, rt := range resp.Topics {
		codes = append(codes, rt.ErrorCode)
	}
	assert.Equal(t, []int16{0, kerr.InvalidRequest.Code, kerr.InvalidPartitions.Code, kerr.InvalidRequest.Code, 0}, codes,
		"a name given twice is INVALID_REQUEST for both, as Kafka")
	assert.Equal(t, map[string]int32{"orders": 4, "payments": 1, "a": 1, "c": 2}, e.cat.Counts())
}

// TestCreateTopicsSaveFailure: a topic the catalog cannot save is not
// created, and the failure is ours (logged at Error).
func TestCreateTopicsSaveFailure(t *testing.T) {
	t.Parallel()
	e := newEnvWith(t, envOptions{catalog: catalog.Config{Prepare: func(tp catalog.Topic) error {
		return errors.New("disk full")
	}}, topics: map[string]int32{}})
	resp := call[*kmsg.CreateTopicsResponse](e, "c", createRequest(7, false, createTopic("a", 1, 1)))
	assert.Equal(t, kerr.KafkaStorageError.Code, resp.Topics[0].ErrorCode)
	require.NotNil(t, resp.Topics[0].ErrorMessage)
	assert.Contains(t, *resp.Topics[0].ErrorMessage, "disk full")
	_, ok := e.cat.Lookup("a")
	assert.False(t, ok, "nothing is shown that was not saved")
	logged := e.logs.Find("saving topic catalog failed")
	require.Len(t, logged, 1)
	assert.Equal(t, slog.LevelError, logged[0].Level)
}

// readCatalog returns the catalog file's contents followed by its
// journal's.
func readCatalog(t *testing.T, c *catalog.Catalog) string {
	t.Helper()
	var out string
	for _, path := range []string{c.Path(), filepath.Join(filepath.Dir(c.Path()), catalog.JournalName)} {
		data, err := os.ReadFile(path)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		require.NoError(t, err)
		out += string(data)
	}
	return out
}

// TestCreateTopicsConfigs creates topics with configs: the catalog holds
// them, the log runs with them before the answer, v5+ answers every
// topic config with its source (also for validateOnly, which creates
// nothing), and a bad, unknown, null or repeated config creates nothing.
func TestCreateTopicsConfigs(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := wiretest.Dial(t, e.serve(), "admin")
	withConfigs := func(name string, kv ...*string) kmsg.CreateTopicsRequestTopic {
		ct := createTopic(name, 2, 1)
		for i := 0; i+1 < len(kv); i += 2 {
			ct.Configs = append(ct.Configs, kmsg.CreateTopicsRequestTopicConfig{Name: *kv[i], Value: kv[i+1]})
		}
		return ct
	}
	p := kmsg.StringPtr
	for _, v := range []int16{4, 5, 7} {
		name := fmt.Sprintf("configured-v%d", v)
		resp := wiretest.Do[*kmsg.CreateTopicsResponse](t, c, createRequest(v, false, withConfigs(name, p("segment.bytes"), p("1048576"), p("retention.bytes"), p("8192"))))
		got := resp.Topics[0]
		require.Equal(t, int16(0), got.ErrorCode, "v%d", v)
		require.Equal(t, map[string]string{"segment.bytes": "1048576", "retention.bytes": "8192"}, e.ownConfigs(name))
		require.Equal(t, records.TopicSettings{SegmentBytes: 1048576, RetentionBytes: 8192, MaxMessageBytes: records.DefaultMaxMessageBytes}, e.log.Settings(name))
		var rows []string
		for _, cfg := range got.Configs {
			rows = append(rows, fmt.Sprintf("%s=%s@%d", cfg.Name, *cfg.Value, cfg.Source))
		}
		if v < 5 {
			require.Empty(t, rows, "v%d has no configs in its answer", v)
			continue
		}
		require.Equal(t, []string{"max.message.bytes=1048588@5", "retention.bytes=8192@1", "segment.bytes=1048576@1"}, rows, "v%d", v)
	}

	dry := wiretest.Do[*kmsg.CreateTopicsResponse](t, c, createRequest(5, true, withConfigs("dry", p("max.message.bytes"), p("4096"))))
	require.Equal(t, int16(0), dry.Topics[0].ErrorCode)
	require.Equal(t, "4096", *dry.Topics[0].Configs[0].Value)
	_, ok := e.cat.Lookup("dry")
	require.False(t, ok, "validateOnly creates nothing")

	for _, tc := range []struct {
		topic kmsg.CreateTopicsRequestTopic
		code  int16
		msg   string
	}{
		{withConfigs("bad", p("segment.bytes"), p("12")), kerr.InvalidConfig.Code, "Value must be at least 1024"},
		{withConfigs("bad", p("compression.type"), p("zstd")), kerr.InvalidConfig.Code, "Unknown topic config name: compression.type"},
		{withConfigs("bad", p("retention.bytes"), nil), kerr.InvalidConfig.Code, "Null value not supported for topic configs: retention.bytes"},
		{withConfigs("bad", p("retention.bytes"), p("1"), p("retention.bytes"), p("2")), kerr.InvalidRequest.Code, "Error due to duplicate config keys"},
	} {
		for _, validateOnly := range []bool{false, true} {
			resp := wiretest.Do[*kmsg.CreateTopicsResponse](t, c, createRequest(5, validateOnly, tc.topic))
			require.Equal(t, tc.code, resp.Topics[0].ErrorCode, tc.msg)
			require.Contains(t, *resp.Topics[0].ErrorMessage, tc.msg)
			require.Empty(t, resp.Topics[0].Configs)
		}
		_, ok := e.cat.Lookup("bad")
		require.False(t, ok, "%s: nothing created", tc.msg)
		_, _, err := e.log.Offsets("bad", 0)
		require.ErrorIs(t, err, records.ErrUnknownPartition, "%s: no partition log", tc.msg)
	}
}
