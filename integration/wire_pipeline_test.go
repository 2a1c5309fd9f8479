package integration

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/testkit/wiretest"
)

// TestWirePipeline200: 200 mixed requests written at once on one
// connection are answered in request order (the client checks every
// correlation id), each with its own answer. Metadata before v4 may
// create the topics it names (TestWireMetadataAutoCreation), so "nope"
// is unknown up to the first such request and exists, with one
// partition, from that request on: the answers show the order too.
func TestWirePipeline200(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	c := wiretest.Dial(t, b.Addr(), "c")
	member := join(t, c, "g", "orders")
	topics := [][]string{{"orders"}, {"payments"}, {"nope"}, {"payments", "orders"}}

	reqs := make([]kmsg.Request, 200)
	for i := range reqs {
		switch i % 3 {
		case 0: // the generation says which answer is due: current or stale
			gen := member.Generation
			if i%2 == 1 {
				gen += int32(i)
			}
			reqs[i] = wiretest.HeartbeatRequest(int16(i%5), "g", member.MemberID, gen)
		case 1:
			reqs[i] = metadataRequest(int16(i%13), topics[i%4])
		default:
			reqs[i] = apiVersionsRequest(int16(i % 5))
		}
	}
	resps, err := c.Pipeline(t.Context(), reqs)
	require.NoError(t, err)
	require.Len(t, resps, len(reqs))
	want := map[string]string{"orders": "orders:0:4", "payments": "payments:0:1", "nope": "nope:3:0"}
	createdAt := -1
	for i, req := range reqs {
		if md, ok := req.(*kmsg.MetadataRequest); ok && md.Version < 4 && topics[i%4][0] == "nope" {
			createdAt = i
			break
		}
	}
	require.Positive(t, createdAt, "the pipeline holds a Metadata v0-3 naming nope")
	for i, resp := range resps {
		if i == createdAt {
			want["nope"] = "nope:0:1"
		}
		require.Equal(t, reqs[i].Key(), resp.Key(), "response %d", i)
		require.Equal(t, reqs[i].GetVersion(), resp.GetVersion(), "response %d", i)
		switch r := resp.(type) {
		case *kmsg.HeartbeatResponse:
			code := codeNone
			if i%2 == 1 {
				code = codeIllegalGeneration
			}
			assert.Equal(t, code, r.ErrorCode, "response %d", i)
		case *kmsg.MetadataResponse:
			var w []string
			for _, name := range topics[i%4] {
				w = append(w, want[name])
			}
			assert.Equal(t, w, metadataTopics(r), "response %d", i)
		case *kmsg.ApiVersionsResponse:
			assert.Equal(t, codeNone, r.ErrorCode, "response %d", i)
			assert.NotEmpty(t, r.ApiKeys, "response %d", i)
		}
	}
	// The connection is still in step.
	assert.Equal(t, codeNone, heartbeat(t, c, "g", member.MemberID, member.Generation))
}
