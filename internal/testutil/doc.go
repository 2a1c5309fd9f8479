// Package testutil holds the helpers that tests in several packages
// share, one of each, as Go's own tree keeps net/http/internal/testcert:
//
//   - NewPKI: a certificate authority with a server and a client
//     certificate it signed, in memory and as PEM files;
//   - LogRecorder: a slog.Handler that keeps every record for assertions
//     and can echo them to the test's output;
//   - Buffer: a bytes buffer safe for a writer and readers at once, for
//     the output of a process under test;
//   - BuildMain: a main package built once per test binary, for tests
//     that run minibroker as a process of its own;
//   - CutDialer: a dialer whose connections can all be cut at once, a
//     crashed client as the broker sees it;
//   - Eventually: polling with a deadline, instead of sleeps.
//
// It is imported only by _test.go files. It imports only the standard
// library, so that any package's in-package tests can use it without an
// import cycle.
package testutil
