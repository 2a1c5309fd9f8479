package admin

import (
	"io/fs"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
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
		`m.instance_id`, `r.replaced_by`, `id="connections"`, `"/v1/connections"`, `"data-user"`, `g.double_ownership`, `"data-double-ownership"`,
		`g.total_lag`, `"data-total-lag"`, `"data-rate"`, `f.member_gone`, `"data-member-gone"`, `"data-idle-group"`, `id="help"`} {
		require.Contains(t, page, want)
	}
	require.False(t, regexp.MustCompile(`(?i)(src|href)\s*=|https?://|@import|url\(`).MatchString(page),
		"the page must not load external resources")
	require.NotContains(t, page, "innerHTML", "broker strings go in as text, never as HTML")
}

// TestPageInlinesItsFiles: every file under static/ is in the page, whole,
// in the one place index.html names it, and nothing is left to inline.
func TestPageInlinesItsFiles(t *testing.T) {
	t.Parallel()
	page, err := page()
	require.NoError(t, err)
	require.NotRegexp(t, `\{\{[^}]*\}\}`, string(page), "a name index.html gives is not inlined")
	names, err := fs.Glob(static, "static/*")
	require.NoError(t, err)
	require.ElementsMatch(t, []string{"static/index.html", "static/page.css", "static/ids.js", "static/groups.js", "static/panels.js", "static/page.js"}, names)
	for _, name := range names {
		if name == "static/index.html" {
			continue
		}
		text, err := static.ReadFile(name)
		require.NoError(t, err)
		require.Equal(t, 1, strings.Count(string(page), string(text)), name)
	}
	require.Equal(t, 1, strings.Count(string(page), "<script>"))
	require.Equal(t, 1, strings.Count(string(page), "<style>"))
}
