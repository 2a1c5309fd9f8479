package admin

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/minibroker/minibroker/offsets"
)

// TestDeleteTopicControl: DELETE /v1/topics/{topic} deletes a topic as
// DeleteTopics does (200, with its id): its records and offsets go, the
// group that subscribes moves to a new generation; a second delete is
// 404, a name no topic can have 400 with nothing deleted; and the guard
// refuses a cross-site delete.
func TestDeleteTopicControl(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.produce(t, "payments", 0, 3)
	res := f.join(t, "g", "a", time.Minute, "orders", "payments")
	require.NoError(t, f.coord.CommitDirect("other", []offsets.Entry{{Topic: "payments", Partition: 0, Offset: 2}}))
	payments, _ := f.catalog.Lookup("payments")

	req := newRequest("DELETE", "/v1/topics/payments", "")
	req.Header.Set("Origin", "http://evil.example")
	rec := httptest.NewRecorder()
	f.srv.Handler().ServeHTTP(rec, req)
	code := rec.Code
	require.Equal(t, http.StatusForbidden, code, "the guard stands in front")
	_, ok := f.catalog.Lookup("payments")
	require.True(t, ok)

	code, body := f.do(t, "DELETE", "/v1/topics/payments", "")
	require.Equal(t, http.StatusOK, code, body)
	requireJSON(t, `{"topic":"payments","topic_id":"`+payments.ID.String()+`","partitions":1,"deleted":true}`, body)
	_, ok = f.catalog.Lookup("payments")
	require.False(t, ok)
	_, err := f.log.PartitionStats("payments", 0)
	require.Error(t, err)
	require.Empty(t, f.coord.Committed("other"))
	v, _ := f.coord.Describe("g")
	require.Equal(t, res.Generation+1, v.Generation)

	code, body = f.do(t, "DELETE", "/v1/topics/payments", "")
	require.Equal(t, http.StatusNotFound, code)
	requireJSON(t, `{"error":"topic \"payments\" not found"}`, body)
	code, body = f.do(t, "DELETE", "/v1/topics/"+url.PathEscape("../orders"), "")
	require.Equal(t, http.StatusBadRequest, code, body)
	require.Contains(t, body, "cannot be a topic name")
	require.Equal(t, map[string]int32{"orders": 4}, f.catalog.Counts(), "nothing else deleted")
}
