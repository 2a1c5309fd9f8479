package server

// Controls: a Go function handed every request before the broker handles
// it (docs/design.md, "Faults on demand"), as franz-go's kfake has
// Cluster.Control. A fault is the declarative form, a filter and one of
// four actions, which the admin API and the live page can carry; a
// control is the programmatic form, for a test in the broker's process:
// it sees the decoded request and answers it itself, or lets it through.
// Both live in one registry (Faults) and are applied at one place,
// dispatch (fault_apply.go): controls first, in the order they were
// added, then faults. A request a control answers is not applied, as one
// a fault answers: its handler never runs, so nothing changes.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/protocol"
)

// errControlClose ends the handling of a request a control refused with
// an error: serveConn closes the connection.
var errControlClose = errors.New("connection closed by a control")

// ControlRequest is one request as a control sees it. It is valid only
// during the call, except Request, which the control may keep: while any
// control is installed, no request's buffer is reused.
type ControlRequest struct {
	// Key and Version are the request's API key (kmsg.Heartbeat is 12)
	// and version.
	Key     int16
	Version int16
	// ClientID is the request header's client id.
	ClientID string
	// Remote is the client's address, "127.0.0.1:54321".
	Remote string
	// Request is the decoded request, of the key's type
	// (*kmsg.HeartbeatRequest for key 12). A control must not change it
	// when it lets the request through.
	Request kmsg.Request

	ctx context.Context
}

// Context is done once the request's connection closes or the broker
// stops: a control that waits for something watches it, so that Close
// is never held up.
func (cr *ControlRequest) Context() context.Context { return cr.ctx }

// Control decides what one request gets. It returns:
//
//   - nil, nil: the request goes on, to the next control, the faults and
//     its handler, as if no control were installed (a control that only
//     watches);
//   - a response of the request's API, new for this call: the request
//     gets it, set to the request's version, and nothing of it is
//     applied (its handler never runs); a Produce with acks 0 gets no
//     answer, as ever; a response of another API closes the connection;
//   - an error: the connection is closed without an answer, nothing
//     applied, as a fault's Close.
//
// A control runs on the connection's goroutine, and may be called from
// several connections at once: it must be safe for concurrent use. It
// may block: it holds its own connection alone, as a fault's delay, and
// the answers owed before it on that connection wait with it (so a
// control must never wait for a later request on the same connection).
// It may add or remove controls and faults.
type Control func(*ControlRequest) (kmsg.Response, error)

// ControlHandle is an installed control: Remove takes it out.
type ControlHandle struct {
	fs    *Faults
	id    string
	key   int16 // -1: every API
	fn    Control
	calls atomic.Int64
}

// AddControl installs fn for requests of API key (-1: every API), after
// the controls already installed. A key the broker does not serve, or a
// nil fn, is an error.
func (fs *Faults) AddControl(key int16, fn Control) (*ControlHandle, error) {
	if fn == nil {
		return nil, errors.New("control: nil function")
	}
	if _, ok := protocol.VersionsFor(key); !ok && key != -1 {
		return nil, fmt.Errorf("control: API key %d is not one this broker serves", key)
	}
	fs.mu.Lock()
	defer fs.mu.Unlock()
	fs.next++
	h := &ControlHandle{fs: fs, id: strconv.FormatUint(fs.next, 10), key: key, fn: fn}
	var list []*ControlHandle
	if old := fs.controls.Load(); old != nil {
		list = slices.Clone(*old)
	}
	list = append(list, h)
	fs.controls.Store(&list)
	fs.logger.Info("control added", "control", h.id, "api", keyName(key))
	return h, nil
}

// ID returns the control's id (controls and faults share one sequence).
func (h *ControlHandle) ID() string { return h.id }

// Calls returns how many requests the control has been called for.
func (h *ControlHandle) Calls() int64 { return h.calls.Load() }

// Remove takes the control out: no request that reaches dispatch after
// Remove returns calls it. It is idempotent, and may be called from the
// control itself (a control for one request).
func (h *ControlHandle) Remove() {
	fs := h.fs
	fs.mu.Lock()
	defer fs.mu.Unlock()
	old := fs.controls.Load()
	if old == nil {
		return
	}
	i := slices.Index(*old, h)
	if i < 0 {
		return
	}
	list := slices.Delete(slices.Clone(*old), i, i+1)
	if len(list) == 0 {
		fs.controls.Store(nil) // dispatch's fast path again
	} else {
		fs.controls.Store(&list)
	}
	fs.logger.Info("control removed", "control", h.id, "calls", h.calls.Load())
}

// idle reports whether nothing can change a request: no control
// installed and no fault in force. It is dispatch's whole cost then: two
// atomic loads.
func (fs *Faults) idle() bool {
	return fs.live.Load() == 0 && fs.controls.Load() == nil
}

// keyName names an API key for the log, -1 as every API.
func keyName(key int16) string {
	if key == -1 {
		return "all"
	}
	return kmsg.NameForKey(key)
}

// control offers the request to the controls in order. It returns the
// answer of the first that answers it or refuses it (with r.failed set
// to close the connection), and answered false when every one let it
// through.
func (s *Server) control(r *request, req kmsg.Request) (resp kmsg.Response, answered bool) {
	list := s.faults.controls.Load()
	if list == nil {
		return nil, false
	}
	r.retain = true // a control may keep the request, and its bytes with it
	cr := &ControlRequest{Key: int16(r.key), Version: r.version, ClientID: r.clientID, Remote: r.remote, Request: req, ctx: r.ctx}
	for _, h := range *list {
		if h.key != -1 && h.key != int16(r.key) {
			continue
		}
		h.calls.Add(1)
		resp, err := h.fn(cr)
		switch {
		case err != nil: // serveConn logs it as it closes the connection
			r.failed = fmt.Errorf("%w %s: %w", errControlClose, h.id, err)
			return nil, true
		case resp == nil:
			continue
		case resp.Key() != int16(r.key):
			r.failed = fmt.Errorf("%w %s: it answered %s with a %s response", errControlClose, h.id,
				kmsg.NameForKey(int16(r.key)), kmsg.NameForKey(resp.Key()))
			return nil, true
		}
		r.logger.Info("control answered", "control", h.id, "api", kmsg.NameForKey(int16(r.key)), "client_id", r.clientID)
		if p, ok := req.(*kmsg.ProduceRequest); ok && p.Acks == 0 {
			return nil, true // acks 0 is never answered
		}
		resp.SetVersion(r.version)
		return resp, true
	}
	return nil, false
}
