// Package lab runs the chapter's experiments ("Consumer Groups": the
// rebalance lab and exercises 2 to 4) against minibroker over a real TCP
// socket, and prints every Kafka request it sends with the answer it gets,
// so a reader sees the rules at work on the wire. rebalance, fencing and
// expiry speak the classic group protocol; rebalance-848 and fencing-848
// run the same experiments over the consumer protocol (KIP-848,
// docs/design.md section 9). replay and zombie add records (Produce, Fetch,
// ListOffsets): replay is exercise 1, a consumer's position against the
// group's committed offset across a crash; zombie counts the records a
// paused owner's commit makes the group process again, with the generation
// fence and without it; exactly-once (KIP-98, KIP-447) gives the zombie
// output, plain and then transactional, and counts the duplicates a
// read_committed reader finds downstream. partition is the zombie a fault makes: two stock
// kgo consumers, one of whose heartbeats the broker drops (broker.Fault,
// or POST /v1/faults against a broker in another process).
//
// It also holds the pieces the labs are built from and that the
// comparison scenarios (package compare) reuse: Member, a classic
// consumer-group member that speaks raw kmsg requests through
// wireclient.Client; ConsumerMember, its consumer-protocol counterpart; and
// StartBroker, an in-process broker on an ephemeral loopback port.
//
// Lab output is deterministic against a fresh in-process broker: classic
// member ids come from the broker's sequence ("lab-000001"),
// consumer-protocol members name themselves ("member-1"), the clock is
// manual, and nothing prints a port, a time of day, a path or a topic id.
// The golden files in testdata pin it byte for byte.
//
// lab is a client of the broker: it may import server and coordinator to
// start one in process, but the labs themselves talk to it only through
// the Kafka protocol, except where a session must end: the expiry lab, and
// replay and zombie in process, move the in-process manual clock and run
// the coordinator's expiry step, as the chapter's exercise 3 does (against
// a broker in another process, replay and zombie wait for its own expiry
// step instead), and where partition puts its fault on the broker. The
// partition lab's consumers are kgo's, whose requests it does not print:
// it prints what each step leaves behind, which is the same on every run.
package lab
