package server

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
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
		{"current member", heartbeatRequest(4, "g", a.MemberID, gen), 0},
		{"v0", heartbeatRequest(0, "g", a.MemberID, gen), 0},
		{"empty group id", heartbeatRequest(4, "", a.MemberID, gen), kerr.InvalidGroupID.Code},
		{"unknown group", heartbeatRequest(4, "nope", a.MemberID, gen), kerr.UnknownMemberID.Code},
		{"unknown group, stale generation", heartbeatRequest(4, "nope", a.MemberID, gen+5), kerr.UnknownMemberID.Code},
		{"stale generation before unknown member", heartbeatRequest(4, "g", "c-999999", gen-1), kerr.IllegalGeneration.Code},
		{"stale generation", heartbeatRequest(4, "g", a.MemberID, gen-1), kerr.IllegalGeneration.Code},
		{"unknown member at the current generation", heartbeatRequest(4, "g", "c-999999", gen), kerr.UnknownMemberID.Code},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, call[*kmsg.HeartbeatResponse](e, "c", tc.req).ErrorCode)
		})
	}
}
