// Package server puts the coordinator on the Kafka wire: a listener, one
// goroutine per connection that reads a request, answers it and only then
// reads the next (so responses leave in request order, as Kafka's muted
// channels guarantee), a dispatch table from API key to handler with one
// file per API, the translation between kmsg messages and coordinator
// calls, the one table from coordinator errors to Kafka error codes
// (errors.go), the expiry ticker and shutdown.
//
// It also defends the process against its peers (docs/reliability.md):
// at most Config.MaxConnections connections, each closed after
// Config.IdleTimeout without a request or Config.FrameReadTimeout inside a
// frame, an answer's write or the TLS handshake (Config.TLS), and each
// holding memory in proportion to what its peer has sent, up to
// Config.MaxFrameBytes: a larger Produce is read past in fixed memory and
// answered MESSAGE_TOO_LARGE (oversize.go). Memory is accounted in one
// type (memory.go) with two lanes, always waited for in one order, frames
// before work; nothing that holds work waits for the budget again. An
// HTTP request on the Kafka port is told where the admin API is (http.go).
//
// Faults on demand (fault.go, fault_apply.go, fault_codes.go) and controls
// (control.go, Go functions that see each request first) are checked in
// one place, dispatch, and cost two atomic loads when none is in force.
// The registry's mutex guards only the registry: nothing else is locked
// while it is held, and it is never taken with another lock held; a
// control is called with no lock held.
//
// With Config.SASLUsers, a connection must authenticate (SASL PLAIN or
// SCRAM, sasl.go) before anything but ApiVersions and the SASL requests is
// handled; a failed authentication is answered and closed only after
// Settings.FailedAuthenticationDelay (sasl_failure.go).
//
// It is the only package that knows both the wire (protocol, kmsg, kerr)
// and the rules (coordinator). Where its behaviour differs from Kafka's,
// docs/behavior-matrix.md says so and names the test that shows it.
package server
