package server

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestFindCoordinator(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for v := int16(0); v <= 3; v++ {
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.Version, req.CoordinatorKey, req.CoordinatorType = v, "g", 0
		resp := call[*kmsg.FindCoordinatorResponse](e, "c", req)
		assert.Zero(t, resp.ErrorCode, "v%d", v)
		assert.Equal(t, int32(0), resp.NodeID, "v%d", v)
		assert.Equal(t, "127.0.0.1", resp.Host, "v%d", v)
		assert.Equal(t, int32(envPort), resp.Port, "v%d", v)
		assert.Empty(t, resp.Coordinators, "v%d", v)
	}
	for v := int16(4); v <= 6; v++ {
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.Version, req.CoordinatorKeys = v, []string{"b", "a", "b", ""}
		resp := call[*kmsg.FindCoordinatorResponse](e, "c", req)
		require.Len(t, resp.Coordinators, 4, "v%d: one entry per key, duplicates included", v)
		for i, key := range req.CoordinatorKeys {
			assert.Equal(t, kmsg.FindCoordinatorResponseCoordinator{Key: key, NodeID: 0, Host: "127.0.0.1", Port: envPort},
				resp.Coordinators[i], "v%d: keys echoed in order", v)
		}
	}
}
