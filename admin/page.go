package admin

// GET /: the live page, one HTML file with its style and script inline,
// embedded in the binary (no build step, no external resource). It polls
// /v1/groups and /v1/events every 500 ms, /v1/topics and /v1/storage
// every 2 s, and redraws; its buttons send the API's controls as JSON
// from the page's own origin, as the guard requires.

import (
	"embed"
	"net/http"
)

//go:embed static/index.html
var static embed.FS

// pageCSP forbids the page everything but its own inline style and script
// and requests to this server.
const pageCSP = "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'; img-src data:; base-uri 'none'; form-action 'none'"

func (s *Server) handlePage(w http.ResponseWriter, _ *http.Request) {
	page, err := static.ReadFile("static/index.html")
	if err != nil { // unreachable: the file is embedded
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Content-Security-Policy", pageCSP)
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Write(page)
}
