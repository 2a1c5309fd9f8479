package lab

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/wireclient"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the labs' current output")

// runGolden runs a lab twice against fresh in-process brokers and
// compares its output byte for byte with testdata/<name>.golden.
func runGolden(t *testing.T, name string) {
	t.Helper()
	var first, second bytes.Buffer
	require.NoError(t, Run(testContext(t), name, &first, ""))
	require.NoError(t, Run(testContext(t), name, &second, ""))
	require.Equal(t, first.String(), second.String(), "two runs printed different output")

	path := filepath.Join("testdata", name+".golden")
	if *update {
		require.NoError(t, os.WriteFile(path, first.Bytes(), 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "run go test ./tools/lab -update to create it")
	require.Equal(t, string(want), first.String(), "output differs from %s; if the change is intended, run go test ./tools/lab -run %s -update", path, t.Name())
}

func golden(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name+".golden"))
	require.NoError(t, err)
	return string(b)
}

func testContext(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// lastStepMember1 returns member 1's last assignment line.
func lastStepMember1(out string) string {
	i := strings.LastIndex(out, "  member 1: ")
	line := out[i+len("  member 1: "):]
	return line[:strings.IndexByte(line, '\n')]
}

// userCommit commits offset for topic's partition in group as a client
// outside any generation does (generation -1), and requires NONE.
func userCommit(t *testing.T, c *wireclient.Client, group, topic string, partition int32, offset int64) {
	t.Helper()
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Version, req.Group, req.Generation = 8, group, -1
	req.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: topic, Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: partition, Offset: offset, LeaderEpoch: -1}}}}
	resp, err := Request[*kmsg.OffsetCommitResponse](testContext(t), c, req)
	require.NoError(t, err)
	require.Zero(t, resp.Topics[0].Partitions[0].ErrorCode)
}
