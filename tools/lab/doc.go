// Package lab runs the chapter's experiments ("Consumer Groups": the
// rebalance lab and exercises 2 to 4) against minibroker over a real TCP
// socket, and prints every Kafka request it sends with the answer it gets,
// so a reader sees the rules at work on the wire.
//
// It also holds the two pieces the labs are built from and that the
// comparison scenarios (package compare) reuse: Member, a consumer-group
// member that speaks raw kmsg requests through protocol.Client, and
// StartBroker, an in-process broker on an ephemeral loopback port with a
// temporary data directory.
//
// Lab output is deterministic against a fresh in-process broker: member ids
// come from the broker's sequence ("lab-000001"), the clock is manual, and
// nothing prints a port, a time of day or a path. The golden files in
// testdata pin it byte for byte.
//
// lab is a client of the broker: it may import server and coordinator to
// start one in process, but the labs themselves talk to it only through
// the Kafka protocol, except for the expiry lab, which moves the
// in-process manual clock and runs the coordinator's expiry step, as the
// chapter's exercise 3 does.
package lab
