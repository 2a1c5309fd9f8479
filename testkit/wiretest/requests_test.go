package wiretest

import (
	"encoding/hex"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestJoinRequest(t *testing.T) {
	t.Parallel()
	req := JoinRequest(5, "g", "m-1", 30*time.Second, "orders")
	assert.Equal(t, int16(5), req.Version)
	assert.Equal(t, "g", req.Group)
	assert.Equal(t, "m-1", req.MemberID)
	assert.Equal(t, int32(30000), req.SessionTimeoutMillis)
	assert.Equal(t, int32(30000), req.RebalanceTimeoutMillis)
	assert.Equal(t, "consumer", req.ProtocolType)
	require.Len(t, req.Protocols, 1)
	assert.Equal(t, "roundrobin", req.Protocols[0].Name)
	// version 0 | one topic "orders" | null user data
	assert.Equal(t, "0000"+"00000001"+"0006"+hex.EncodeToString([]byte("orders"))+"ffffffff", hex.EncodeToString(req.Protocols[0].Metadata))
	var m kmsg.ConsumerMemberMetadata
	require.NoError(t, m.ReadFrom(ConsumerMetadata(1, "a", "b")))
	assert.Equal(t, int16(1), m.Version)
	assert.Equal(t, []string{"a", "b"}, m.Topics)
}

func TestGroupRequests(t *testing.T) {
	t.Parallel()
	s := SyncRequest(3, "g", "m", 7)
	assert.Equal(t, []any{int16(3), "g", "m", int32(7)}, []any{s.Version, s.Group, s.MemberID, s.Generation})
	h := HeartbeatRequest(4, "g", "m", 7)
	assert.Equal(t, []any{int16(4), "g", "m", int32(7)}, []any{h.Version, h.Group, h.MemberID, h.Generation})
	old := LeaveRequest(2, "g", "a", "b")
	assert.Equal(t, "a", old.MemberID, "before v3 the first member alone")
	assert.Empty(t, old.Members)
	assert.Empty(t, LeaveRequest(0, "g").MemberID)
	batch := LeaveRequest(3, "g", "a", "b")
	assert.Empty(t, batch.MemberID)
	assert.Equal(t, []kmsg.LeaveGroupRequestMember{{MemberID: "a"}, {MemberID: "b"}}, batch.Members)
}
