package integration

// Fetch positions over real sockets: kgo consumers fetch on connections of
// their own, with their client ids, and the admin API ties a connection's
// position to a member only when exactly one member of the group has that
// client id and host (docs/design.md section 10).

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/internal/testutil"
	"github.com/minibroker/minibroker/testkit/wiretest"
)

// adminPositionsGroup is the part of GET /v1/groups/{group} these tests
// read.
type adminPositionsGroup struct {
	State   string `json:"state"`
	Members []struct {
		MemberID   string `json:"member_id"`
		ClientID   string `json:"client_id"`
		ClientHost string `json:"client_host"`
	} `json:"members"`
	Partitions []struct {
		Topic          string `json:"topic"`
		Partition      int32  `json:"partition"`
		LogStartOffset *int64 `json:"log_start_offset"`
		LogEndOffset   *int64 `json:"log_end_offset"`
		Owner          string `json:"owner"`
		Committed      *int64 `json:"committed"`
		Lag            *int64 `json:"lag"`
		FetchPositions []struct {
			MemberID     string `json:"member_id"`
			Unattributed string `json:"unattributed"`
			ClientID     string `json:"client_id"`
			Remote       string `json:"remote"`
			Offset       int64  `json:"offset"`
		} `json:"fetch_positions"`
	} `json:"partitions"`
}

// adminPositions reads GET /v1/groups/{group}; ok is false while the
// group does not exist yet.
func adminPositions(t *testing.T, b *testBroker, group string) (g adminPositionsGroup, ok bool) {
	t.Helper()
	code, body := adminHTTP(t, "GET", b.adminURL()+"/v1/groups/"+group, "")
	if code == http.StatusNotFound {
		return g, false
	}
	require.Equal(t, http.StatusOK, code, body)
	require.NoError(t, json.Unmarshal([]byte(body), &g), body)
	return g, true
}

// adminConsumer starts a kgo group consumer of topic with clientID in
// group: no autocommit, reading from the start, heartbeating every
// 100 ms. Cleanup closes it.
func adminConsumer(t *testing.T, b *testBroker, clientID, group, topic string) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(b.Addr()),
		kgo.ClientID(clientID),
		kgo.ConsumerGroup(group),
		kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.DisableAutoCommit(),
		kgo.HeartbeatInterval(kgoHeartbeat),
		kgo.FetchMaxWait(kgoFetchMaxWait),
		kgo.RetryBackoffFn(func(int) time.Duration { return kgoRetryBackoff }),
	)
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	return cl
}

// TestAdminFetchPositionAttributed: 10 records in a partition; a kgo
// consumer with a client id of its own reads them all and commits 6. The
// group shows log end 10, committed 6, lag 4, and the consumer's fetch
// position, 10, on its fetch connection, attributed to its member.
func TestAdminFetchPositionAttributed(t *testing.T) {
	t.Parallel()
	b := startBroker(t, adminConfig)
	require.NoError(t, b.CreateTopic("ledger", 1, nil))
	adminProduce(t, wiretest.Dial(t, b.Addr(), "producer"), "ledger", 0, 10)

	cl := adminConsumer(t, b, "ledger-reader-1", "readers", "ledger")
	ctx, cancel := context.WithTimeout(t.Context(), kgoWait)
	defer cancel()
	var read []int64
	for len(read) < 10 {
		fetches := cl.PollFetches(ctx)
		require.NoError(t, ctx.Err(), "read %v", read)
		fetches.EachRecord(func(r *kgo.Record) { read = append(read, r.Offset) })
	}
	require.Equal(t, []int64{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, read)
	var code int16 = -1
	cl.CommitOffsetsSync(ctx, map[string]map[int32]kgo.EpochOffset{"ledger": {0: {Epoch: -1, Offset: 6}}},
		func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
			require.NoError(t, err)
			code = resp.Topics[0].Partitions[0].ErrorCode
		})
	require.Zero(t, code, "the commit of 6")

	var g adminPositionsGroup
	testutil.Eventually(t, kgoWait, func() string {
		g, _ = adminPositions(t, b, "readers")
		if len(g.Partitions) != 1 || len(g.Partitions[0].FetchPositions) != 1 || g.Partitions[0].FetchPositions[0].Offset != 10 {
			return fmt.Sprintf("no fetch position at 10 yet: %+v", g.Partitions)
		}
		return ""
	})
	require.Len(t, g.Members, 1)
	m := g.Members[0]
	require.Equal(t, "ledger-reader-1", m.ClientID)
	require.Equal(t, "/127.0.0.1", m.ClientHost)
	p := g.Partitions[0]
	require.Equal(t, "ledger", p.Topic)
	require.Equal(t, int32(0), p.Partition)
	require.Equal(t, int64(0), *p.LogStartOffset)
	require.Equal(t, int64(10), *p.LogEndOffset)
	require.Equal(t, m.MemberID, p.Owner)
	require.Equal(t, int64(6), *p.Committed)
	require.Equal(t, int64(4), *p.Lag)
	pos := p.FetchPositions[0]
	require.Equal(t, m.MemberID, pos.MemberID, "attributed: the one member with this client id and host")
	require.Empty(t, pos.Unattributed)
	require.Equal(t, "ledger-reader-1", pos.ClientID)
	require.True(t, strings.HasPrefix(pos.Remote, "127.0.0.1:"), pos.Remote)
}

// TestAdminFetchPositionUnattributed: two kgo consumers in one group share
// the client id "twin" on one host; whichever reads the partition, its
// position is shown unattributed, with the reason.
func TestAdminFetchPositionUnattributed(t *testing.T) {
	t.Parallel()
	b := startBroker(t, adminConfig)
	require.NoError(t, b.CreateTopic("shared", 1, nil))
	adminProduce(t, wiretest.Dial(t, b.Addr(), "producer"), "shared", 0, 3)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	for range 2 {
		cl := adminConsumer(t, b, "twin", "twins", "shared")
		go func() { // keep the consumer polling, as an application would
			for ctx.Err() == nil {
				cl.PollFetches(ctx)
			}
		}()
	}

	var g adminPositionsGroup
	testutil.Eventually(t, kgoWait, func() string {
		g, _ = adminPositions(t, b, "twins")
		if g.State != "Stable" || len(g.Members) != 2 || len(g.Partitions) != 1 || len(g.Partitions[0].FetchPositions) == 0 {
			return fmt.Sprintf("not two members and a fetch position yet: %+v", g)
		}
		return ""
	})
	for _, pos := range g.Partitions[0].FetchPositions {
		require.Empty(t, pos.MemberID)
		require.Equal(t, "2 members share client id twin on /127.0.0.1", pos.Unattributed)
		require.Equal(t, "twin", pos.ClientID)
		require.True(t, strings.HasPrefix(pos.Remote, "127.0.0.1:"), pos.Remote)
	}
}
