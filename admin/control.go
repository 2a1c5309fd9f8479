package admin

// POST /v1/clock/advance and POST /v1/expire: the two controls the
// chapter's expiry exercise needs when the broker runs on a manual clock
// (docs/design.md section 2). Time moves only when asked, and members expire
// only inside the expiry step, so a script decides every instant. Then the
// controls of one group: end a member's session, force a rebalance, and
// DELETE /v1/groups/{group}, Kafka's DeleteGroups for one group.

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"time"

	"github.com/minibroker/minibroker/coordinator"
)

// maxBodyBytes caps a control request's body.
const maxBodyBytes = 4 << 10

// maxAdvanceMS is the largest advance accepted, so that the duration does
// not overflow.
const maxAdvanceMS = math.MaxInt64 / int64(time.Millisecond)

// advanceRequest is POST /v1/clock/advance's body. MS is a pointer so that
// a missing value can be told from zero, which is allowed.
type advanceRequest struct {
	MS *int64 `json:"ms"`
}

// clockJSON answers POST /v1/clock/advance with the new reading.
type clockJSON struct {
	Now   string `json:"now"`
	NowMS int64  `json:"now_ms"`
}

// expiredJSON answers POST /v1/expire.
type expiredJSON struct {
	Expired []expiredMember `json:"expired"`
}

// expiredMember names one member the expiry step removed.
type expiredMember struct {
	Group    string `json:"group"`
	MemberID string `json:"member"`
}

func (s *Server) handleAdvance(w http.ResponseWriter, r *http.Request) {
	if s.manual == nil {
		writeError(w, http.StatusConflict, "the clock is real: only a broker started with --clock manual can be advanced")
		return
	}
	req, err := decodeAdvance(w, r)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	switch {
	case req.MS == nil:
		writeError(w, http.StatusBadRequest, `want {"ms":N}: ms is missing`)
		return
	case *req.MS < 0:
		writeError(w, http.StatusBadRequest, fmt.Sprintf("ms must not be negative, got %d: the clock only moves forward", *req.MS))
		return
	case *req.MS > maxAdvanceMS:
		writeError(w, http.StatusBadRequest, fmt.Sprintf("ms must be at most %d, got %d", maxAdvanceMS, *req.MS))
		return
	}
	now, err := s.manual.Advance(time.Duration(*req.MS) * time.Millisecond)
	if err != nil { // unreachable: the advance is not negative
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	s.logger.Info("clock advanced", "by", time.Duration(*req.MS)*time.Millisecond, "now_ms", now.UnixMilli())
	var out clockJSON
	out.Now, out.NowMS = stamp(now)
	writeJSON(w, http.StatusOK, out)
}

// decodeAdvance reads the one JSON object of an advance: no unknown
// fields, nothing after it, at most maxBodyBytes.
func decodeAdvance(w http.ResponseWriter, r *http.Request) (advanceRequest, error) {
	var req advanceRequest
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBodyBytes))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		if errors.Is(err, io.EOF) {
			return req, errors.New(`want {"ms":N}: the body is empty`)
		}
		return req, fmt.Errorf(`want {"ms":N}: %w`, err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return req, errors.New(`want {"ms":N}: unexpected data after the object`)
	}
	return req, nil
}

func (s *Server) handleExpire(w http.ResponseWriter, _ *http.Request) {
	out := expiredJSON{Expired: []expiredMember{}}
	for _, e := range s.coord.Expire() { // the step logs whom it removed
		out.Expired = append(out.Expired, expiredMember{Group: e.Group, MemberID: e.MemberID})
	}
	writeJSON(w, http.StatusOK, out)
}

// memberExpiredJSON answers POST /v1/groups/{group}/members/{member}/expire.
type memberExpiredJSON struct {
	Group      string `json:"group"`
	MemberID   string `json:"member"`
	Generation int32  `json:"generation"` // the group's generation after the rebalance
}

// handleExpireMember ends one member's session now (coordinator
// ExpireMember, which logs it): the way to fence a live client, whose
// heartbeats would otherwise renew its lease for ever.
func (s *Server) handleExpireMember(w http.ResponseWriter, r *http.Request) {
	group, member := r.PathValue("group"), r.PathValue("member")
	if err := s.coord.ExpireMember(group, member); err != nil {
		writeError(w, http.StatusNotFound, fmt.Sprintf("member %q is not in group %q", member, group))
		return
	}
	v, _ := s.coord.Describe(group)
	writeJSON(w, http.StatusOK, memberExpiredJSON{Group: group, MemberID: member, Generation: v.Generation})
}

// rebalanceJSON answers POST /v1/groups/{group}/rebalance.
type rebalanceJSON struct {
	Group      string `json:"group"`
	Generation int32  `json:"generation"`
}

// deletedJSON answers DELETE /v1/groups/{group}.
type deletedJSON struct {
	Group   string `json:"group"`
	Deleted bool   `json:"deleted"`
}

// handleDeleteGroup deletes a group without members and its committed
// offsets (coordinator DeleteGroups, as Kafka's DeleteGroups): 404 for a
// group with neither state nor offsets, 409 for one with members, 400 for
// an id no group can have, 503 when the disk refuses.
func (s *Server) handleDeleteGroup(w http.ResponseWriter, r *http.Request) {
	group := r.PathValue("group")
	err := s.coord.DeleteGroups(group)[0]
	switch {
	case err == nil:
		s.logger.Info("group deleted on request", "group", group)
		writeJSON(w, http.StatusOK, deletedJSON{Group: group, Deleted: true})
	case errors.Is(err, coordinator.ErrGroupIDNotFound):
		writeError(w, http.StatusNotFound, fmt.Sprintf("group %q not found", group))
	case errors.Is(err, coordinator.ErrNonEmptyGroup):
		writeError(w, http.StatusConflict, fmt.Sprintf("group %q has members: only an Empty group can be deleted; its members must leave or expire first", group))
	case errors.Is(err, coordinator.ErrInvalidGroupID):
		writeError(w, http.StatusBadRequest, fmt.Sprintf("%q cannot be a group id: %v", group, err))
	default:
		writeError(w, http.StatusServiceUnavailable, fmt.Sprintf("deleting group %q failed: %v", group, err))
	}
}

// handleRebalance starts a new generation of a group with the same
// members (coordinator ForceRebalance).
func (s *Server) handleRebalance(w http.ResponseWriter, r *http.Request) {
	group := r.PathValue("group")
	if err := s.coord.ForceRebalance(group); err != nil {
		writeError(w, http.StatusNotFound, fmt.Sprintf("group %q not found", group))
		return
	}
	s.logger.Info("rebalance forced on request", "group", group)
	v, _ := s.coord.Describe(group)
	writeJSON(w, http.StatusOK, rebalanceJSON{Group: group, Generation: v.Generation})
}
