package server

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/protocol"
)

// TestHandlersMatchTheVersionTable: one handler per advertised API, and
// each answers its own API at every advertised version.
func TestHandlersMatchTheVersionTable(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	h := handlers()
	assert.Len(t, h, len(protocol.SupportedVersions()))
	for _, vr := range protocol.SupportedVersions() {
		fn, ok := h[kmsg.Key(vr.Key)]
		if !assert.True(t, ok, "no handler for %s", kmsg.NameForKey(vr.Key)) {
			continue
		}
		for v := vr.Min; v <= vr.Max; v++ {
			req := kmsg.RequestForKey(vr.Key)
			req.SetVersion(v)
			if f, ok := req.(*kmsg.FetchRequest); ok {
				f.MaxWaitMillis = 0
			}
			resp := fn(e.srv, e.req("c", v), req)
			assert.Equal(t, vr.Key, resp.Key(), "%s v%d", kmsg.NameForKey(vr.Key), v)
			assert.Equal(t, v, resp.GetVersion(), "%s v%d answers at its version", kmsg.NameForKey(vr.Key), v)
		}
	}
}
