package admin

// POST /v1/faults, GET /v1/faults and DELETE /v1/faults/{id}: faults on
// demand (server/fault.go) over HTTP, behind the guard like every
// state-changing call. A fault matches requests by API key, group,
// member id, client id, topic and partitions, and answers them an error
// code, holds them, drops them or closes their connection. A fault whose
// member is gone says so (fault_members.go).

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/minibroker/minibroker/server"
)

// maxFaultBodyBytes caps a POST /v1/faults body: room for a fault with
// hundreds of keys and partitions, not for a flood.
const maxFaultBodyBytes = 64 << 10

// faultJSON is a fault as the API takes and gives it. The numbers are
// read wide so that an out-of-range one gets the fault's own message.
type faultJSON struct {
	ID         string  `json:"id,omitempty"`
	Keys       []int   `json:"keys,omitempty"`
	Group      string  `json:"group,omitempty"`
	Member     string  `json:"member,omitempty"`
	ClientID   string  `json:"clientId,omitempty"`
	Topic      string  `json:"topic,omitempty"`
	Partitions []int32 `json:"partitions,omitempty"`
	Err        int     `json:"err,omitempty"`
	DelayMS    int64   `json:"delayMs,omitempty"`
	Drop       bool    `json:"drop,omitempty"`
	Close      bool    `json:"close,omitempty"`
	Count      int     `json:"count"`
	// Hits, Remaining, Warnings and MemberGone are answered, never read.
	// Warnings say what a fault names that does not exist now (a group,
	// a member id, a topic, a partition), until it first applies: it is
	// in force all the same, and matches once a request names one.
	Hits      *int64   `json:"hits,omitempty"`
	Remaining *int     `json:"remaining,omitempty"`
	Warnings  []string `json:"warnings,omitempty"`
	// MemberGone is set when the fault names a member that is in no
	// group the fault can match (fault_members.go).
	MemberGone *memberGoneJSON `json:"member_gone,omitempty"`
}

// faultsJSON answers GET /v1/faults.
type faultsJSON struct {
	Faults []faultJSON `json:"faults"`
}

// toFault checks the numbers that do not fit the fault's fields and
// converts; the fault's own Validate checks the rest.
func (j *faultJSON) toFault() (server.Fault, error) {
	var f server.Fault
	for _, k := range j.Keys {
		if k < 0 || k > 1<<15-1 {
			return f, fmt.Errorf("fault: API key %d is not one this broker serves", k)
		}
		f.Keys = append(f.Keys, int16(k))
	}
	if j.Err < -(1<<15) || j.Err > 1<<15-1 {
		return f, fmt.Errorf("fault: %d is not a Kafka error code", j.Err)
	}
	if j.DelayMS > int64(server.MaxFaultDelay/time.Millisecond) {
		return f, fmt.Errorf("fault: delayMs %d is above %d", j.DelayMS, server.MaxFaultDelay/time.Millisecond)
	}
	f.Group, f.Member, f.ClientID, f.Topic, f.Partitions = j.Group, j.Member, j.ClientID, j.Topic, j.Partitions
	f.Err, f.Delay, f.Drop, f.Close, f.Count = int16(j.Err), time.Duration(j.DelayMS)*time.Millisecond, j.Drop, j.Close, j.Count
	return f, f.Validate()
}

// statusJSON renders one listed fault.
func statusJSON(st server.FaultStatus) faultJSON {
	f := st.Fault
	j := faultJSON{ID: st.ID, Group: f.Group, Member: f.Member, ClientID: f.ClientID, Topic: f.Topic, Partitions: f.Partitions,
		Err: int(f.Err), DelayMS: f.Delay.Milliseconds(), Drop: f.Drop, Close: f.Close, Count: f.Count}
	for _, k := range f.Keys {
		j.Keys = append(j.Keys, int(k))
	}
	hits, remaining := st.Hits, st.Remaining
	j.Hits, j.Remaining, j.Warnings = &hits, &remaining, st.Warnings
	return j
}

func (s *Server) handleInjectFault(w http.ResponseWriter, r *http.Request) {
	if s.faults == nil {
		writeError(w, http.StatusNotFound, "this broker takes no faults")
		return
	}
	var req faultJSON
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxFaultBodyBytes))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		if errors.Is(err, io.EOF) {
			err = errors.New("the body is empty")
		}
		writeError(w, http.StatusBadRequest, fmt.Sprintf(`want a fault, {"keys":[12],"group":"g","member":"m","drop":true,"count":-1}: %v`, err))
		return
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		writeError(w, http.StatusBadRequest, "want one fault: unexpected data after the object")
		return
	}
	if req.ID != "" || req.Hits != nil || req.Remaining != nil || req.Warnings != nil || req.MemberGone != nil {
		writeError(w, http.StatusBadRequest, "id, hits, remaining, warnings and member_gone are the broker's to give")
		return
	}
	f, err := req.toFault()
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	h, err := s.faults.Inject(f)
	if errors.Is(err, server.ErrTooManyFaults) {
		writeError(w, http.StatusConflict, err.Error())
		return
	}
	if err != nil { // unreachable: toFault validated it
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	st := server.FaultStatus{ID: h.ID(), Fault: h.Fault(), Hits: h.Hits(), Remaining: h.Remaining(), Warnings: h.Warnings()}
	j := statusJSON(st)
	j.MemberGone = s.membersGone([]server.FaultStatus{st})[st.ID]
	writeJSON(w, http.StatusOK, j)
}

func (s *Server) handleFaults(w http.ResponseWriter, _ *http.Request) {
	out := faultsJSON{Faults: []faultJSON{}}
	if s.faults != nil {
		list := s.faults.List()
		gone := s.membersGone(list)
		for _, st := range list {
			j := statusJSON(st)
			j.MemberGone = gone[st.ID]
			out.Faults = append(out.Faults, j)
		}
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) handleRemoveFault(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if s.faults == nil || !s.faults.Remove(id) {
		writeError(w, http.StatusNotFound, fmt.Sprintf("no fault %q", id))
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"id": id, "removed": true})
}

// Series of the faults, read from the registry at each scrape:
//
//	minibroker_faults_applied_total{action,api}  counter
//	minibroker_faults_live                       gauge
//
// action is one of error, delay, drop and close, and api one of the APIs the
// broker serves, so the labels are bounded.
var (
	faultsAppliedDesc = prometheus.NewDesc("minibroker_faults_applied_total",
		"Requests a fault changed, by its action (error, delay, drop, close) and the request's API.", []string{"action", "api"}, nil)
	faultsLiveDesc = prometheus.NewDesc("minibroker_faults_live",
		"Faults in force: not used up, not removed.", nil, nil)
)

// faultCollector reports the registry's counters.
type faultCollector struct{ faults *server.Faults }

func (c faultCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- faultsAppliedDesc
	ch <- faultsLiveDesc
}

func (c faultCollector) Collect(ch chan<- prometheus.Metric) {
	for action, byAPI := range c.faults.Counts() {
		for api, n := range byAPI {
			ch <- prometheus.MustNewConstMetric(faultsAppliedDesc, prometheus.CounterValue, float64(n), action, api)
		}
	}
	ch <- prometheus.MustNewConstMetric(faultsLiveDesc, prometheus.GaugeValue, float64(c.faults.Live()))
}
