package admin

// Who may talk to the admin API. Its controls change the broker (the
// clock, expiry, fencing), and it listens on a loopback address by
// default, which every web page the user opens can reach: a page from
// another origin can send a "simple" cross-origin POST (no preflight) or
// rebind its own DNS name to 127.0.0.1 and read the answers. So:
//
//   - every request must name an allowed Host: a loopback name or address,
//     or the address the API is bound to (a rebinding page sends its own
//     name);
//   - a state-changing request must carry Content-Type: application/json,
//     which neither a form nor a no-cors fetch can send, and, if it has
//     an Origin, one whose host is the request's Host;
//   - with a token (Config.Token, required when the API is bound to a
//     non-loopback address), every API request must carry
//     "Authorization: Bearer <token>"; the page itself is served without
//     it and sends the token it is given in its URL fragment.
//
// Every refusal is logged at Info ("admin request refused", with the
// status, method, path, host and origin), so that a page that tried to
// drive the broker leaves a trace.

import (
	"crypto/subtle"
	"fmt"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/minibroker/minibroker/internal/hostport"
)

// guard wraps the API's handler with the checks above.
type guard struct {
	next   http.Handler
	token  string
	hosts  func() []string // extra allowed host names: the bound address
	logger *slog.Logger
}

func (g *guard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if g.token == "" && !g.allowedHost(r.Host) {
		g.refuse(w, r, http.StatusForbidden, fmt.Sprintf("host %q is not allowed: use a loopback address such as 127.0.0.1, or give the broker an --admin-token", r.Host))
		return
	}
	page := r.Method == http.MethodGet && r.URL.Path == "/"
	if g.token != "" && !page && !g.authorized(r) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="minibroker"`)
		g.refuse(w, r, http.StatusUnauthorized, "missing or wrong bearer token (Authorization: Bearer <--admin-token>)")
		return
	}
	if changesState(r.Method) {
		if ct, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || ct != "application/json" {
			g.refuse(w, r, http.StatusUnsupportedMediaType, "state-changing requests must be sent with Content-Type: application/json")
			return
		}
		if origin := r.Header.Get("Origin"); origin != "" && !sameOrigin(origin, r.Host) {
			g.refuse(w, r, http.StatusForbidden, fmt.Sprintf("origin %q may not change this broker: only pages served by this API may", origin))
			return
		}
	}
	g.next.ServeHTTP(w, r)
}

// refuse answers r with status and msg, and logs the refusal.
func (g *guard) refuse(w http.ResponseWriter, r *http.Request, status int, msg string) {
	g.logger.Info("admin request refused", "status", status, "method", r.Method, "path", r.URL.Path,
		"host", r.Host, "origin", r.Header.Get("Origin"))
	writeError(w, status, msg)
}

// changesState reports whether a request with method may change the
// broker.
func changesState(method string) bool {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return false
	}
	return true
}

func (g *guard) authorized(r *http.Request) bool {
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return ok && subtle.ConstantTimeCompare([]byte(got), []byte(g.token)) == 1
}

// allowedHost reports whether a request's Host names this API: a
// loopback name or address, or the host the API is bound to.
func (g *guard) allowedHost(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.Trim(host, "[]"), ".")
	if IsLoopbackHost(host) {
		return true
	}
	if g.hosts != nil {
		for _, h := range g.hosts() {
			if strings.EqualFold(h, host) {
				return true
			}
		}
	}
	return false
}

// IsLoopbackHost reports whether host, a name or an address without a
// port, can only mean this machine: "localhost" (and names under
// .localhost), or a loopback address.
func IsLoopbackHost(host string) bool { return hostport.IsLoopbackHost(host) }

// sameOrigin reports whether origin (scheme://host[:port]) is the page's
// own: its host and port are the request's Host.
func sameOrigin(origin, host string) bool {
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return false
	}
	return strings.EqualFold(u.Host, host)
}
