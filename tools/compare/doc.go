// Package compare runs the same scripted consumer-group scenarios against
// minibroker and against kfake, franz-go's in-process fake Kafka cluster,
// and reports what each answered.
//
// Each Scenario drives raw kmsg requests through lab.Member over real TCP
// connections and reduces what it saw to a short answer (error code names,
// generation deltas, whether an offset was stored). The answer each side is
// documented to give lives beside the script, in the scenario table, and
// names the row of docs/behavior-matrix.md that explains it; the tests
// assert both sides, so a change in minibroker or in kfake shows up.
//
// kfake implements Kafka's classic group protocol with its join barrier: a
// JoinGroup that starts a rebalance returns only when every member has
// re-joined. The scripts therefore behave as real clients do: a member
// learns of a rebalance from its heartbeat and re-joins, joins that must
// meet at the barrier run concurrently, and the leader sends a plan in its
// SyncGroup (minibroker ignores it). Against minibroker the same scripts
// never wait: every join completes on its own.
//
// The record scenarios (produce-fetch, commit-replay, zombie-commit,
// direct-commit-backwards) each have a topic of one partition named like
// their group, which Prepare creates before any scenario runs; they put
// ten records in it with lab.Produce and read them back with lab.Fetch:
// the chapter's exercise 1 and the zombie's commit, on both sides.
//
// The kip848-* scenarios speak Kafka 4's consumer protocol
// (ConsumerGroupHeartbeat, through lab.ConsumerMember), which kfake also
// implements. There nobody waits on either side; what differs is when a
// moved partition reaches its new owner: kfake revokes it from the old
// owner first, minibroker hands both members their new assignments at
// their next heartbeats (docs/design.md section 9).
//
// The txn-* scenarios are transactional producers (KIP-98, KIP-447) made
// of raw requests: InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn,
// TxnOffsetCommit, EndTxn and a transactional Produce, for the rules where
// the brokers differ (the fenced code by version, EndTxn with nothing
// begun, RequireStable, another id's producer id) or might (a produce to a
// partition not added, a stale generation). Their transactional ids are
// named like their groups, and a scenario that adds a partition adds its
// own record topic's, so that no marker lands in the chapter's topics.
package compare
