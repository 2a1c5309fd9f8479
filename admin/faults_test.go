package admin

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/minibroker/minibroker/server"
)

// TestFaultsAPI: POST puts a fault in force and answers it with its id,
// GET lists it with its hits and what remains, DELETE removes it.
func TestFaultsAPI(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.join(t, "g", "m-1", time.Minute, "orders")
	code, body := f.do(t, "POST", "/v1/faults", `{"keys":[12],"group":"g","member":"m-1","drop":true,"count":-1}`)
	require.Equal(t, http.StatusOK, code, body)
	requireJSON(t, `{"id":"1","keys":[12],"group":"g","member":"m-1","drop":true,"count":-1,"hits":0,"remaining":-1}`, body)
	code, body = f.do(t, "POST", "/v1/faults", `{"keys":[8],"clientId":"c","topic":"orders","partitions":[0,2],"err":16,"count":2}`)
	require.Equal(t, http.StatusOK, code, body)
	requireJSON(t, `{"id":"2","keys":[8],"clientId":"c","topic":"orders","partitions":[0,2],"err":16,"count":2,"hits":0,"remaining":2}`, body)
	code, body = f.do(t, "POST", "/v1/faults", `{"delayMs":250}`)
	require.Equal(t, http.StatusOK, code, body)
	requireJSON(t, `{"id":"3","delayMs":250,"count":0,"hits":0,"remaining":1}`, body)

	list := f.faults.List()
	require.Len(t, list, 3)
	require.Equal(t, server.Fault{Keys: []int16{8}, ClientID: "c", Topic: "orders", Partitions: []int32{0, 2}, Err: kerr.NotCoordinator.Code, Count: 2}, list[1].Fault)

	code, body = f.do(t, "DELETE", "/v1/faults/3", "")
	require.Equal(t, http.StatusOK, code, body)
	requireJSON(t, `{"id":"3","removed":true}`, body)
	code, body = f.do(t, "DELETE", "/v1/faults/3", "")
	require.Equal(t, http.StatusNotFound, code)
	requireJSON(t, `{"error":"no fault \"3\""}`, body)

	code, body = f.do(t, "GET", "/v1/faults", "")
	require.Equal(t, http.StatusOK, code)
	requireJSON(t, `{"faults":[
		{"id":"1","keys":[12],"group":"g","member":"m-1","drop":true,"count":-1,"hits":0,"remaining":-1},
		{"id":"2","keys":[8],"clientId":"c","topic":"orders","partitions":[0,2],"err":16,"count":2,"hits":0,"remaining":2}]}`, body)
}

// TestFaultsAPIWarnings: a fault naming a group, member, topic or
// partition that does not exist is put in force all the same, and the
// POST's answer, GET's listing and a Warn line in the log say what is
// missing; GET says it for as long as it is missing, and not for a fault
// used up.
func TestFaultsAPIWarnings(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.join(t, "billing", "billing-000002", time.Minute, "orders")
	f.join(t, "billing", "billing-000001", time.Minute, "orders")

	code, body := f.do(t, "POST", "/v1/faults", `{"keys":[12],"group":"billing","member":"kgo-000004","drop":true,"count":-1}`)
	require.Equal(t, http.StatusOK, code, body)
	requireJSON(t, `{"id":"1","keys":[12],"group":"billing","member":"kgo-000004","drop":true,"count":-1,"hits":0,"remaining":-1,
		"warnings":["group \"billing\" has no member \"kgo-000004\" now (its members: billing-000001, billing-000002)"]}`, body)
	code, body = f.do(t, "POST", "/v1/faults", `{"keys":[12],"group":"biling","member":"billing-000001","drop":true,"count":-1}`)
	require.Equal(t, http.StatusOK, code, body)
	require.Contains(t, body, `"warnings":["no group \"biling\" now, so no member \"billing-000001\" in it"]`)
	code, body = f.do(t, "POST", "/v1/faults", `{"member":"kgo-000004","close":true}`)
	require.Equal(t, http.StatusOK, code, body)
	require.Contains(t, body, `"warnings":["no member \"kgo-000004\" in any group now"]`)
	code, body = f.do(t, "POST", "/v1/faults", `{"keys":[1],"topic":"order","err":6,"count":-1}`)
	require.Equal(t, http.StatusOK, code, body)
	require.Contains(t, body, `"warnings":["no topic \"order\" now"]`)
	code, body = f.do(t, "POST", "/v1/faults", `{"keys":[1],"topic":"orders","partitions":[3,4,9],"err":6}`)
	require.Equal(t, http.StatusOK, code, body)
	require.Contains(t, body, `"warnings":["topic \"orders\" has 4 partitions: 4 is not one of them","topic \"orders\" has 4 partitions: 9 is not one of them"]`)
	code, body = f.do(t, "POST", "/v1/faults", `{"keys":[12],"group":"billing","member":"billing-000001","topic":"orders","delayMs":5,"count":1}`)
	require.Equal(t, http.StatusOK, code, body)
	require.NotContains(t, body, "warnings", "everything it names exists")
	require.Len(t, f.faults.List(), 6, "every fault is in force")

	warned := f.logs.Find("fault names what does not exist")
	require.Len(t, warned, 5)
	require.Equal(t, slog.LevelWarn, warned[0].Level)
	require.Equal(t, "1", warned[0].Attrs["fault"])
	require.Equal(t, `[group "billing" has no member "kgo-000004" now (its members: billing-000001, billing-000002)]`, warned[0].Attrs["warnings"])

	// The member joins (a test may set a fault before its target
	// exists): fault 1 warns no more. Fault 5 is removed; a removed
	// fault warns of nothing.
	f.join(t, "billing", "kgo-000004", time.Minute, "orders")
	require.True(t, f.faults.Remove("5"))
	h, err := f.faults.Inject(server.Fault{Keys: []int16{1}, Topic: "nope", Err: 6})
	require.NoError(t, err)
	require.Equal(t, []string{`no topic "nope" now`}, h.Warnings())
	f.faults.Remove(h.ID())
	require.Nil(t, h.Warnings())
	code, body = f.do(t, "GET", "/v1/faults", "")
	require.Equal(t, http.StatusOK, code)
	requireJSON(t, `{"faults":[
		{"id":"1","keys":[12],"group":"billing","member":"kgo-000004","drop":true,"count":-1,"hits":0,"remaining":-1},
		{"id":"2","keys":[12],"group":"biling","member":"billing-000001","drop":true,"count":-1,"hits":0,"remaining":-1,
			"warnings":["no group \"biling\" now, so no member \"billing-000001\" in it"]},
		{"id":"3","member":"kgo-000004","close":true,"count":0,"hits":0,"remaining":1},
		{"id":"4","keys":[1],"topic":"order","err":6,"count":-1,"hits":0,"remaining":-1,"warnings":["no topic \"order\" now"]},
		{"id":"6","keys":[12],"group":"billing","member":"billing-000001","topic":"orders","delayMs":5,"count":1,"hits":0,"remaining":1}]}`, body)
}

// TestFaultsAPIBadInput: each bad fault is a 400 that says what is wrong,
// and nothing is put in force.
func TestFaultsAPIBadInput(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	for _, tc := range []struct{ body, want string }{
		{``, "the body is empty"},
		{`{"drop":true`, "unexpected EOF"},
		{`{"drop":true}{}`, "unexpected data after the object"},
		{`{"drop":true,"color":"red"}`, `unknown field \"color\"`},
		{`{"keys":[99],"drop":true}`, "API key 99 is not one this broker serves"},
		{`{"keys":[70000],"drop":true}`, "API key 70000 is not one this broker serves"},
		{`{"err":12345}`, "12345 is not a Kafka error code"},
		{`{"err":99999}`, "99999 is not a Kafka error code"},
		{`{"delayMs":-5}`, "delay -5ms is not within"},
		{`{"delayMs":9223372036854775807}`, "delayMs 9223372036854775807 is above 600000"},
		{`{"drop":true,"count":-2}`, "count -2"},
		{`{"drop":true,"close":true}`, "exactly one action"},
		{`{}`, "exactly one action"},
		{`{"keys":[3],"err":15}`, "Metadata has no error code of its own"},
		{`{"id":"7","drop":true}`, "id, hits, remaining, warnings and member_gone are the broker's to give"},
		{`{"warnings":["none"],"drop":true}`, "id, hits, remaining, warnings and member_gone are the broker's to give"},
		{`{"member_gone":{"reason":"leave"},"drop":true}`, "id, hits, remaining, warnings and member_gone are the broker's to give"},
		{`{"group":"` + strings.Repeat("g", maxFaultBodyBytes) + `","drop":true}`, "request body too large"},
	} {
		code, body := f.do(t, "POST", "/v1/faults", tc.body)
		require.Equal(t, http.StatusBadRequest, code, tc.body)
		require.Contains(t, body, tc.want, tc.body)
	}
	require.Empty(t, f.faults.List())
}

// TestFaultsAPICap: past server.MaxFaults in force, POST is a 409 that
// says so.
func TestFaultsAPICap(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	for range server.MaxFaults {
		_, err := f.faults.Inject(server.Fault{Drop: true, Count: -1})
		require.NoError(t, err)
	}
	code, body := f.do(t, "POST", "/v1/faults", `{"drop":true}`)
	require.Equal(t, http.StatusConflict, code)
	require.Contains(t, body, "1000 faults are listed already: remove one first")
}

// TestFaultsAPIGuard: POST and DELETE change the broker: a missing
// content type and a foreign Origin are refused, and nothing changes.
func TestFaultsAPIGuard(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	h, err := f.faults.Inject(server.Fault{Drop: true})
	require.NoError(t, err)
	for _, method := range []string{"POST", "DELETE"} {
		path := "/v1/faults"
		if method == "DELETE" {
			path += "/" + h.ID()
		}
		r := httptest.NewRequest(method, path, strings.NewReader(`{"drop":true}`))
		r.Host = "127.0.0.1:19644"
		rec := httptest.NewRecorder()
		f.srv.Handler().ServeHTTP(rec, r)
		require.Equal(t, http.StatusUnsupportedMediaType, rec.Code, method)

		r = newRequest(method, path, `{"drop":true}`)
		r.Header.Set("Origin", "http://evil.example")
		rec = httptest.NewRecorder()
		f.srv.Handler().ServeHTTP(rec, r)
		require.Equal(t, http.StatusForbidden, rec.Code, method)
		require.Contains(t, rec.Body.String(), `origin \"http://evil.example\" may not change this broker`)
	}
	require.Len(t, f.faults.List(), 1)
	require.Equal(t, h.ID(), f.faults.List()[0].ID)
}

// TestFaultsMetrics: the faults' series count the requests changed, by
// action and API, and the faults in force.
func TestFaultsMetrics(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	_, err := f.faults.Inject(server.Fault{Keys: []int16{12}, Drop: true, Count: -1})
	require.NoError(t, err)
	fams := scrape(t, f.srv.Handler())
	require.Equal(t, float64(1), value(fams, "minibroker_faults_live"))
	require.Equal(t, float64(-1), value(fams, "minibroker_faults_applied_total", "action", "drop", "api", "Heartbeat"))
}
