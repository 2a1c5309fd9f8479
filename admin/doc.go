// Package admin is minibroker's HTTP side door, for people watching the
// chapter's rules at work: a JSON API over the coordinator (groups,
// members, leases, assignments, committed offsets), the two manual-clock
// controls that let the chapter's expiry exercise run over HTTP (advance
// the clock, run the expiry step), Prometheus metrics, and a live page
// embedded in the binary.
//
// It watches the broker through three hooks and changes nothing in it:
// server.Observer (requests, commits, connections, fencing rejections),
// coordinator.Config.OnRebalance (the generation timeline), and
// offsets.Config.ObserveSync (the journal's fsyncs). Its only writes are
// the ones the API names: the manual clock and the expiry step.
//
// Endpoints (net/http, Go 1.22 patterns):
//
//	GET  /                     the live page (static/index.html, polling)
//	GET  /v1/groups            every group, in detail
//	GET  /v1/groups/{group}    one group; 404 when it does not exist
//	GET  /v1/events            recent rebalances and fencing rejections
//	POST /v1/clock/advance     {"ms":N}; manual clock only (409 otherwise)
//	POST /v1/expire            runs the expiry step
//	GET  /metrics              Prometheus text format, minibroker_* only
//
// JSON names are snake_case; every instant is given twice, as RFC 3339
// with nanoseconds ("deadline") and as Unix milliseconds ("deadline_ms"),
// read from the coordinator's clock.
//
// It may import coordinator, server and clock; nothing imports it but
// cmd/minibroker.
package admin
