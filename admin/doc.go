// Package admin is minibroker's HTTP side door, for people watching the
// chapter's rules at work: a JSON API over the coordinator and the
// partition logs, the controls that let the chapter's exercises run over
// HTTP, Prometheus metrics, and a live page embedded in the binary. The
// API and the page show the chapter's four states side by side, per
// partition: who is in the group (membership), who owns the partition in
// this generation (assignment), where each consumer reads (its fetch
// position, as the broker sees it) and what the group has committed (the
// durable offset), beside the log's start and end and the lag.
//
// It watches the broker through four hooks and changes nothing in it:
// server.Observer (requests, commits, fetches, connections, fencing
// rejections), coordinator.Config.OnRebalance (the generation timeline,
// with the reason for each generation), coordinator.Config.OnGroupDeleted
// (which drops a deleted group's series) and offsets.Config.ObserveSync
// (the journal's fsyncs). Its only writes are the ones the API names.
//
// Endpoints (net/http, Go 1.22 patterns):
//
//	GET    /                                       the live page (static/, inlined into one document; polling)
//	GET    /v1/groups                              every group, in detail, with its partitions
//	GET    /v1/groups/{group}                      one group; 404 when it does not exist
//	GET    /v1/events                              recent rebalances and fencing rejections, with reasons, and topics clients named that did not exist
//	GET    /v1/topics                              every topic: its own configs, per partition log start, log end, bytes, fetch positions
//	GET    /v1/storage                             the offsets store's counters (journal, folds, failures)
//	GET    /v1/connections                         every open Kafka connection: remote, client id, SASL user and mechanism
//	POST   /v1/clock/advance                       {"ms":N}; manual clock only (409 otherwise)
//	POST   /v1/expire                              runs the expiry step
//	POST   /v1/groups/{group}/members/{member}/expire  ends one member's session now; 404 unknown
//	POST   /v1/groups/{group}/rebalance            a new generation with the same members; 404 unknown
//	DELETE /v1/groups/{group}                      deletes an Empty group and its offsets; 409 with members, 404 unknown
//	GET    /metrics                                Prometheus text format, minibroker_* only
//
// Every state-changing request must be JSON (Content-Type:
// application/json) from the API's own origin, to a loopback Host, or
// carry the token (guard.go); refusals are logged.
//
// Fetch positions: a Fetch names no member, and clients such as kgo fetch
// on a connection of their own, so the Recorder keeps positions per
// connection (remote address and client id) and partition, and a group
// shows a connection's position as a member's only when exactly one of its
// members has the connection's client id and client host; otherwise
// unattributed, with the reason ("2 members share client id kgo on
// /127.0.0.1"). docs/design.md section 10 has the rule, its limits and
// every bound the package keeps.
//
// JSON names are snake_case; every instant is given twice, as RFC 3339
// with nanoseconds ("deadline") and as Unix milliseconds ("deadline_ms"),
// read from the coordinator's clock; unknown offsets are null.
//
// It may import coordinator, server, records, offsets, the catalog and
// clock; nothing imports it but broker.
package admin
