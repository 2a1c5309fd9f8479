package integration

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/broker"
	"github.com/minibroker/minibroker/records"
	"github.com/minibroker/minibroker/testkit/wiretest"
)

// missingFixture is a data dir a broker wrote and closed: 40 batches of
// one record each to payments-0 in segments of 1 KiB, one record in
// orders-0.
type missingFixture struct {
	dir  string
	segs []string // payments-0's segment files, oldest first
}

func writeMissingFixture(t *testing.T) *missingFixture {
	t.Helper()
	dir := t.TempDir()
	b := startBroker(t, func(cfg *broker.Config) { cfg.DataDir, cfg.SegmentBytes = dir, 1024 })
	c := wiretest.Dial(t, b.Addr(), "c")
	for i := range 40 {
		produceValues(t, c, "payments", 0, fmt.Sprintf("value-%02d-%s", i, strings.Repeat("x", 60)))
	}
	produceValues(t, c, "orders", 0, "kept")
	require.NoError(t, b.Close())
	segs, err := filepath.Glob(filepath.Join(dir, broker.LogsDir, "payments-0", "*.log"))
	require.NoError(t, err)
	require.Greater(t, len(segs), 2)
	return &missingFixture{dir: dir, segs: segs}
}

// TestStartRefusesMissingData: each way an operator can lose acknowledged
// records while the broker is down makes the next start fail, naming the
// file and what is missing and how to proceed, where it used to start
// silently without them. With AcceptDataLoss the broker starts, serves
// what is left and logs the loss at Error.
func TestStartRefusesMissingData(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		damage func(t *testing.T, fx *missingFixture) string // returns what the error must say
	}{
		{"newest segment deleted", func(t *testing.T, fx *missingFixture) string {
			require.NoError(t, os.Remove(fx.segs[len(fx.segs)-1]))
			return "partition payments-0: the log ends at offset"
		}},
		{"newest segment truncated to 0", func(t *testing.T, fx *missingFixture) string {
			newest := fx.segs[len(fx.segs)-1]
			require.NoError(t, os.Truncate(newest, 0))
			return fmt.Sprintf("in %s, but offsets up to 40 were acknowledged (newest segment deleted or truncated)", newest)
		}},
		{"oldest segment deleted", func(t *testing.T, fx *missingFixture) string {
			require.NoError(t, os.Remove(fx.segs[0]))
			return fmt.Sprintf("in %s, but retention kept offsets from 0 (oldest segment deleted)", fx.segs[1])
		}},
		{"partition directory deleted", func(t *testing.T, fx *missingFixture) string {
			pdir := filepath.Dir(fx.segs[0])
			require.NoError(t, os.RemoveAll(pdir))
			return fmt.Sprintf("partition payments-0: directory %s is gone with offsets 0 to 40", pdir)
		}},
		{"topics.json deleted", func(t *testing.T, fx *missingFixture) string {
			require.NoError(t, os.Remove(filepath.Join(fx.dir, "topics.json")))
			return fmt.Sprintf(`%s holds offsets 0 to 40, but the catalog %s has no topic "payments"`,
				filepath.Dir(fx.segs[0]), filepath.Join(fx.dir, "topics.json"))
		}},
		{"catalog entry without its logs", func(t *testing.T, fx *missingFixture) string {
			pdir := filepath.Join(fx.dir, broker.LogsDir, "orders-3") // never written
			require.NoError(t, os.RemoveAll(pdir))
			return fmt.Sprintf(`has partition 3 of topic "orders", but its directory %s is missing`, pdir)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fx := writeMissingFixture(t)
			want := tc.damage(t, fx)
			cfg := broker.Config{Topics: defaultTopics(), DataDir: fx.dir, RecordSettings: broker.RecordSettings{SegmentBytes: 1024}}
			_, err := broker.Start(context.Background(), cfg)
			require.ErrorIs(t, err, records.ErrDataLoss)
			require.ErrorContains(t, err, want)
			require.ErrorContains(t, err, "start with --accept-data-loss")

			b := startBroker(t, func(cfg *broker.Config) { cfg.DataDir, cfg.SegmentBytes, cfg.AcceptDataLoss = fx.dir, 1024, true })
			assert.NotEmpty(t, b.Logs.AtLevel(slog.LevelError), "the loss is logged at Error")
			c := wiretest.Dial(t, b.Addr(), "c")
			got := fetchPartitions(t, c, fetchRequest(11, 0, fetchAt{"orders", 0, 0}))["orders-0"]
			require.Equal(t, codeNone, got.ErrorCode)
			if tc.name != "topics.json deleted" {
				assert.Equal(t, []string{"0:kept"}, decodedValues(t, got.RecordBatches), "the rest is served")
				return
			}
			// The topics start over empty; the old records are set
			// aside, whole.
			assert.Empty(t, decodedValues(t, got.RecordBatches))
			aside, err := filepath.Glob(filepath.Join(fx.dir, broker.LogsDir, "payments-0.1-orphaned", "*.log"))
			require.NoError(t, err)
			assert.Len(t, aside, len(fx.segs))
		})
	}
}

// TestCreateTopicsOutOfDescriptors: a broker process with RLIMIT_NOFILE
// 256 holds at most 128 partitions (half the limit: each keeps its
// active segment open). A topic of 1,000 partitions, and then
// CreatePartitions taking a topic past the bound, are INVALID_PARTITIONS
// naming the limit, before anything is made: nothing of either is on
// disk and the broker goes on serving, with descriptors to spare for
// connections. A restart under the same limit starts, and knows no such
// topic. Before, the create ran out of descriptors part-way (240-odd
// partition directories left outside the catalog); then it failed with
// KAFKA_STORAGE_ERROR and removed them, but a CreatePartitions up to
// the limit could still leave the broker no descriptor to accept with.
func TestCreateTopicsOutOfDescriptors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := startProcessNoFile(t, 256, "--data-dir", dir)
	c := wiretest.Dial(t, p.Addr, "process-test")
	resp := wiretest.Do[*kmsg.CreateTopicsResponse](t, c, createTopicsRequest(7, false, newTopic("big", 1000, 1)))
	require.Equal(t, kerr.InvalidPartitions.Code, resp.Topics[0].ErrorCode, "%v", resp.Topics[0].ErrorMessage)
	require.NotNil(t, resp.Topics[0].ErrorMessage)
	assert.Contains(t, *resp.Topics[0].ErrorMessage, "more than 128 (half of the process's limit of 256 open files)")
	dirs, err := filepath.Glob(filepath.Join(dir, broker.LogsDir, "big-*"))
	require.NoError(t, err)
	require.Empty(t, dirs, "nothing of the refused topic on disk")
	// Still serving: a small topic works, and cannot grow past the bound.
	ensureTopic(t, c, "small", 4)
	produceValues(t, c, "small", 3, "after")
	grow := kmsg.NewPtrCreatePartitionsRequest()
	grow.Version, grow.TimeoutMillis = 3, 5000
	grow.Topics = []kmsg.CreatePartitionsRequestTopic{{Topic: "small", Count: 200}}
	grown := wiretest.Do[*kmsg.CreatePartitionsResponse](t, c, grow)
	require.Equal(t, kerr.InvalidPartitions.Code, grown.Topics[0].ErrorCode, "%v", grown.Topics[0].ErrorMessage)
	dirs, err = filepath.Glob(filepath.Join(dir, broker.LogsDir, "small-*"))
	require.NoError(t, err)
	require.Len(t, dirs, 4, "no partition past the bound made")
	ensureTopic(t, c, "more", 100) // within the bound
	require.NotContains(t, p.logs.String(), "too many open files")
	require.Equal(t, 0, p.signal(t, syscall.SIGTERM, waitTimeout))

	p = startProcessNoFile(t, 256, "--data-dir", dir)
	c = wiretest.Dial(t, p.Addr, "process-test")
	md := kmsg.NewPtrMetadataRequest()
	md.Version = 9
	for _, name := range []string{"big", "small"} {
		md.Topics = append(md.Topics, kmsg.MetadataRequestTopic{Topic: kmsg.StringPtr(name)})
	}
	got := wiretest.Do[*kmsg.MetadataResponse](t, c, md)
	codes := map[string]int16{}
	for _, tp := range got.Topics {
		codes[*tp.Topic] = tp.ErrorCode
	}
	assert.Equal(t, map[string]int16{"big": codeUnknownTopicOrPartition, "small": codeNone}, codes)
	parts := fetchPartitions(t, c, fetchRequest(11, 0, fetchAt{"small", 3, 0}))
	assert.Equal(t, []string{"0:after"}, decodedValues(t, parts["small-3"].RecordBatches))
}

// TestManySegmentsLowDescriptorLimit: a data dir of 40 partitions with
// about 12 segments each (480 segment files) starts in a broker process
// whose RLIMIT_NOFILE is 256, and every record reads back. Before, start-up
// held every segment's descriptor and could not start.
func TestManySegmentsLowDescriptorLimit(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	b := startBroker(t, func(cfg *broker.Config) {
		cfg.DataDir, cfg.SegmentBytes, cfg.Topics = dir, 1024, map[string]int32{"wide": 40}
	})
	c := wiretest.Dial(t, b.Addr(), "c")
	value := strings.Repeat("v", 200)
	for round := range 48 {
		var parts []partBatch
		for p := range int32(40) {
			parts = append(parts, partBatch{p, valuesBatch(fmt.Sprintf("%02d-%s", round, value))})
		}
		for _, rp := range produceAnswers(t, c, produceRequest(9, -1, "wide", parts...)) {
			require.Equal(t, codeNone, rp.ErrorCode)
		}
	}
	require.NoError(t, b.Close())
	segs, err := filepath.Glob(filepath.Join(dir, broker.LogsDir, "wide-*", "*.log"))
	require.NoError(t, err)
	require.Greater(t, len(segs), 400)

	proc := startProcessNoFile(t, 256, "--data-dir", dir, "--segment-bytes", "1024")
	pc := wiretest.Dial(t, proc.Addr, "process-test")
	for p := range int32(40) {
		var got []string
		for off := int64(0); off < 48; {
			parts := fetchPartitions(t, pc, fetchRequest(11, 0, fetchAt{"wide", p, off}))
			fp := parts[fmt.Sprintf("wide-%d", p)]
			require.Equal(t, codeNone, fp.ErrorCode, "wide-%d at %d", p, off)
			vals := decodedValues(t, fp.RecordBatches)
			require.NotEmpty(t, vals)
			got = append(got, vals...)
			off += int64(len(vals))
		}
		require.Len(t, got, 48)
		require.Equal(t, fmt.Sprintf("47:47-%s", value), got[47])
	}
	require.Equal(t, 0, proc.signal(t, syscall.SIGTERM, waitTimeout))
}

// TestServeRefusesMissingData: `minibroker serve` on a data dir whose
// newest segment was deleted exits 1 with the message naming the file and
// the flag; with --accept-data-loss it starts, logging the loss at Error.
func TestServeRefusesMissingData(t *testing.T) {
	t.Parallel()
	fx := writeMissingFixture(t)
	newest := fx.segs[len(fx.segs)-1]
	require.NoError(t, os.Remove(newest))
	code, out := runServe(t, "--listen", "127.0.0.1:0", "--data-dir", fx.dir, "--segment-bytes", "1024")
	require.Equal(t, 1, code, out)
	assert.Contains(t, out, "partition payments-0: the log ends at offset")
	assert.Contains(t, out, "but offsets up to 40 were acknowledged")
	assert.Contains(t, out, "start with --accept-data-loss")
	assert.NotContains(t, out, "minibroker ready")

	p := startProcess(t, "--data-dir", fx.dir, "--segment-bytes", "1024", "--accept-data-loss")
	assert.Contains(t, p.logs.String(), `level=ERROR msg="acknowledged records missing; starting anyway as told"`)
	require.Equal(t, 0, p.signal(t, syscall.SIGTERM, waitTimeout))
}
