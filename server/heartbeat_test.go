package server

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/testkit/wiretest"
)

// TestHeartbeatChapterOrder: unknown group, then generation, then member
// (Kafka checks the member first).
func TestHeartbeatChapterOrder(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a := e.join("c", "g", "", "orders")
	gen := a.Generation
	tests := []struct {
		name string
		req  *kmsg.HeartbeatRequest
		want int16
	}{
		{"current member", wiretest.HeartbeatRequest(4, "g", a.MemberID, gen), 0},
		{"v0", wiretest.HeartbeatRequest(0, "g", a.MemberID, gen), 0},
		{"empty group id", wiretest.HeartbeatRequest(4, "", a.MemberID, gen), kerr.InvalidGroupID.Code},
		{"unknown group", wiretest.HeartbeatRequest(4, "nope", a.MemberID, gen), kerr.UnknownMemberID.Code},
		{"unknown group, stale generation", wiretest.HeartbeatRequest(4, "nope", a.MemberID, gen+5), kerr.UnknownMemberID.Code},
		{"stale generation before unknown member", wiretest.HeartbeatRequest(4, "g", "c-999999", gen-1), kerr.IllegalGeneration.Code},
		{"stale generation", wiretest.HeartbeatRequest(4, "g", a.MemberID, gen-1), kerr.IllegalGeneration.Code},
		{"unknown member at the current generation", wiretest.HeartbeatRequest(4, "g", "c-999999", gen), kerr.UnknownMemberID.Code},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, call[*kmsg.HeartbeatResponse](e, "c", tc.req).ErrorCode)
		})
	}
}

// TestHeartbeatFencedInstance: the identity question comes before the
// chapter's order.
func TestHeartbeatFencedInstance(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	old, current := e.staticRestart("g")
	a := "a"
	for _, tc := range []struct {
		name     string
		member   string
		instance *string
		gen      int32
		want     int16
	}{
		{"zombie naming its instance", old, &a, 1, kerr.FencedInstanceID.Code},
		{"zombie naming its instance, stale generation", old, &a, 0, kerr.FencedInstanceID.Code},
		{"zombie without its instance", old, nil, 1, kerr.UnknownMemberID.Code},
		{"current member", current, &a, 1, 0},
	} {
		resp := call[*kmsg.HeartbeatResponse](e, "kgo", &kmsg.HeartbeatRequest{Version: 4, Group: "g", MemberID: tc.member, InstanceID: tc.instance, Generation: tc.gen})
		assert.Equal(t, tc.want, resp.ErrorCode, tc.name)
	}
}
