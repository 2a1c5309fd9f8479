package admin

// GET /: the live page, one HTML document with its style and script
// inline, embedded in the binary (no build step, no external resource).
// It polls /v1/groups, /v1/events and /v1/faults every 500 ms,
// /v1/topics, /v1/storage, /v1/connections and /v1/transactions every
// 2 s, and redraws; its buttons send the API's controls as JSON from the
// page's own origin, as the guard requires.
//
// The page's source is split by concern under static/: index.html (the
// markup), page.css, and the scripts ids.js (drawing helpers), groups.js
// (the group cards), panels.js (the side panels) and page.js (polling,
// controls). index.html names each file as {{name}} where its text goes;
// the handler inlines them, so the browser gets one document and the
// CSP needs no other origin, not even this one.

import (
	"embed"
	"fmt"
	"net/http"
	"regexp"
	"strings"
)

//go:embed static/index.html static/page.css static/*.js
var static embed.FS

// pageCSP forbids the page everything but its own inline style and script
// and requests to this server.
const pageCSP = "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'; img-src data:; base-uri 'none'; form-action 'none'"

// pageInclude is where index.html names a file to inline: {{page.css}}.
var pageInclude = regexp.MustCompile(`\{\{([a-z]+\.(?:css|js))\}\}`)

// page returns the live page: index.html with each file it names
// inlined.
func page() ([]byte, error) {
	html, err := static.ReadFile("static/index.html")
	if err != nil {
		return nil, err
	}
	var failed error
	out := pageInclude.ReplaceAllFunc(html, func(m []byte) []byte {
		name := string(pageInclude.FindSubmatch(m)[1])
		text, err := static.ReadFile("static/" + name)
		if err == nil && (strings.Contains(string(text), "</script") || strings.Contains(string(text), "</style")) {
			err = fmt.Errorf("%s closes its own element", name)
		}
		if err != nil && failed == nil {
			failed = err
		}
		return text
	})
	return out, failed
}

func (s *Server) handlePage(w http.ResponseWriter, _ *http.Request) {
	body, err := page()
	if err != nil { // unreachable: the files are embedded, and TestPage reads them
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Content-Security-Policy", pageCSP)
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Write(body)
}
