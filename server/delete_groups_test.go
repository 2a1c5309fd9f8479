package server

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/offsets"
)

func deleteGroupsRequest(version int16, groups ...string) *kmsg.DeleteGroupsRequest {
	req := kmsg.NewPtrDeleteGroupsRequest()
	req.Version, req.Groups = version, groups
	return req
}

// deleteGroupsCodes maps each group of a DeleteGroups answer to its code.
func deleteGroupsCodes(resp *kmsg.DeleteGroupsResponse) []string {
	var out []string
	for _, g := range resp.Groups {
		out = append(out, fmt.Sprintf("%s=%s", g.Group, CodeName(g.ErrorCode)))
	}
	return out
}

// TestDeleteGroupsCodes: every version answers each distinct group once,
// in the order first named, with Kafka's code for it.
func TestDeleteGroupsCodes(t *testing.T) {
	t.Parallel()
	for _, v := range []int16{0, 1, 2} {
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			a := e.join("c", "busy", "", "orders")
			e.join("c", "left", "", "orders")
			e.coord.Leave("left", "c-000002")
			require.NoError(t, e.coord.CommitDirect("manual", []offsets.Entry{{Topic: "orders", Partition: 0, Offset: 4}}))

			resp := call[*kmsg.DeleteGroupsResponse](e, "c", deleteGroupsRequest(v, "left", "busy", "nope", "manual", "bad\x00", "left"))
			assert.Equal(t, []string{"left=NONE", "busy=NON_EMPTY_GROUP", "nope=GROUP_ID_NOT_FOUND", "manual=NONE", "bad\x00=INVALID_GROUP_ID"},
				deleteGroupsCodes(resp))
			_, ok := e.coord.Describe("left")
			assert.False(t, ok)
			assert.Empty(t, e.coord.Committed("manual"))
			view, _ := e.coord.Describe("busy")
			require.Len(t, view.Members, 1)
			assert.Equal(t, a.MemberID, view.Members[0].MemberID)
			assert.Len(t, e.logs.Find("group deleted on request"), 2)
		})
	}
}

// TestDeleteGroupsStoreClosed: a deletion the store refuses is answered
// with the store's code, as a commit would be: a store closed by shutdown
// is COORDINATOR_NOT_AVAILABLE, and the group is left as it was.
func TestDeleteGroupsStoreClosed(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	require.NoError(t, e.coord.CommitDirect("manual", []offsets.Entry{{Topic: "orders", Partition: 0, Offset: 4}}))
	require.NoError(t, e.store.Close())
	resp := call[*kmsg.DeleteGroupsResponse](e, "c", deleteGroupsRequest(2, "manual"))
	assert.Equal(t, []string{"manual=COORDINATOR_NOT_AVAILABLE"}, deleteGroupsCodes(resp))
	assert.Len(t, e.coord.Committed("manual"), 1)
	assert.Empty(t, e.logs.Find("group deleted on request"))
}
