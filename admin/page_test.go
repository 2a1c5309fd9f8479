package admin

import (
	"net/http"
	"net/http/httptest"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestPage: the live page is one self-contained HTML document that polls
// the API; it loads nothing from anywhere else.
func TestPage(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	rec := httptest.NewRecorder()
	f.srv.Handler().ServeHTTP(rec, newRequest("GET", "/", ""))
	require.Equal(t, http.StatusOK, rec.Code)
	require.Equal(t, "text/html; charset=utf-8", rec.Header().Get("Content-Type"))
	require.Equal(t, pageCSP, rec.Header().Get("Content-Security-Policy"))
	page := rec.Body.String()
	for _, want := range []string{`id="groups"`, `id="fencing"`, `id="controls"`, `"/v1/groups"`, `"/v1/events"`, `"/v1/clock/advance"`, `"/v1/expire"`, `"DELETE"`, `"/v1/groups/" + encodeURIComponent(g.group)`, `"data-delete"`, `id="group-result"`,
		`"/v1/topics"`, `"/v1/storage"`, `"/members/"`, `"/rebalance"`, `"data-expire"`, `"data-rebalance"`, `id="topics"`, `id="storage"`, `id="topic-notices"`, `topicNotices(a.events.topics)`,
		`m.instance_id`, `r.replaced_by`, `id="connections"`, `"/v1/connections"`, `"data-user"`, `g.double_ownership`, `"data-double-ownership"`} {
		require.Contains(t, page, want)
	}
	require.False(t, regexp.MustCompile(`(?i)(src|href)\s*=|https?://|@import|url\(`).MatchString(page),
		"the page must not load external resources")
	require.NotContains(t, page, "innerHTML", "broker strings go in as text, never as HTML")
}
