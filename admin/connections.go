package admin

// Connections: who is connected as whom. The server reports every Kafka
// connection as it opens and closes, and what it learns of it between:
// the client id its requests name and, with SASL on, the user it
// authenticated as (server.Observer.ConnIdentified). The table holds the
// open connections only, so it is bounded by the server's
// MaxConnections.

import (
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/minibroker/minibroker/server"
)

// openConn is one open connection, as the recorder knows it.
type openConn struct {
	info   server.ConnInfo
	opened time.Time // by the recorder's clock
}

// connOpened records a new connection.
func (s *Recorder) connOpened(remote string) {
	at := s.now()
	s.connMu.Lock()
	s.conns[remote] = &openConn{info: server.ConnInfo{Remote: remote}, opened: at}
	s.connMu.Unlock()
}

// connClosed forgets a connection.
func (s *Recorder) connClosed(remote string) {
	s.connMu.Lock()
	delete(s.conns, remote)
	s.connMu.Unlock()
}

// ConnIdentified records who a connection is (server.Observer).
func (s *Recorder) ConnIdentified(info server.ConnInfo) {
	s.connMu.Lock()
	defer s.connMu.Unlock()
	if c, ok := s.conns[info.Remote]; ok { // not yet closed
		c.info = info
	}
}

// connectionJSON is one connection in GET /v1/connections.
type connectionJSON struct {
	Remote    string `json:"remote"`
	ClientID  string `json:"client_id"`
	User      string `json:"user"`      // "" when not authenticated (or SASL off)
	Mechanism string `json:"mechanism"` // "PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512" or ""
	TLS       bool   `json:"tls"`
	Opened    string `json:"opened"`
	OpenedMS  int64  `json:"opened_ms"`
}

type connectionsJSON struct {
	Now         string           `json:"now"`
	NowMS       int64            `json:"now_ms"`
	Connections []connectionJSON `json:"connections"`
}

// connections returns the open connections, sorted by remote address.
func (s *Recorder) connections() []connectionJSON {
	s.connMu.Lock()
	out := make([]connectionJSON, 0, len(s.conns))
	for _, c := range s.conns {
		j := connectionJSON{Remote: c.info.Remote, ClientID: c.info.ClientID, User: c.info.User, Mechanism: c.info.Mechanism, TLS: c.info.TLS}
		j.Opened, j.OpenedMS = stamp(c.opened)
		out = append(out, j)
	}
	s.connMu.Unlock()
	slices.SortFunc(out, func(a, b connectionJSON) int { return strings.Compare(a.Remote, b.Remote) })
	return out
}

// handleConnections answers GET /v1/connections: every open Kafka
// connection with its client id and SASL user.
func (s *Server) handleConnections(w http.ResponseWriter, _ *http.Request) {
	out := connectionsJSON{Connections: s.recorder.connections()}
	out.Now, out.NowMS = stamp(s.now())
	writeJSON(w, http.StatusOK, out)
}
