package clients

import (
	"maps"
	"testing"
)

// topic is the topic every scenario produces to and consumes from.
const topic = "orders"

// partitions is topic's partition count.
const partitions = 4

// client is what the group scenarios need from one client under test.
type client struct {
	// name prefixes the client ids and group names of the scenario.
	name string
	// produce writes recs to topic with the client's producer, in order,
	// and returns once every record is acknowledged.
	produce func(t *testing.T, addr, topic string, recs []kv)
	// join starts a member that resets to the earliest offset (see
	// joinFunc).
	join joinFunc
	// reset returns a joinFunc whose members reset to "earliest" or
	// "latest" where the group has no commit, or its commit is out of
	// range (for the clients that reset then).
	reset func(policy string) joinFunc
	// consumerProtocol says the members use KIP-848's consumer protocol
	// (ConsumerGroupHeartbeat) instead of the classic one.
	consumerProtocol bool
}

// joinFunc starts one member of group with client id id, subscribed to
// topic, and reports each record it hands the application to l. The
// returned leave closes the member the way an application shuts the client
// down (committing what the client commits on close, then leaving the
// group) and returns once it has.
type joinFunc func(t *testing.T, addr, group, topic, id string, l *ledger) (leave func())

// testGroupOnce: two members join, the partitions split between them, 200
// records are produced and each is consumed exactly once, in order within its
// partition, by the member that owns its partition; after both leave, the
// committed offsets are the last consumed offset + 1 of every partition.
//
// With the classic protocol the members' commits reach the log end before
// either leaves: a's leave completes a rebalance at once, so b's commit on
// close carries a generation that is no longer current and is fenced
// (ILLEGAL_GENERATION; matrix row no-join-barrier). With the consumer
// protocol a leave moves the other member to a new epoch only at its next
// heartbeat, whose answer the member takes in before it closes (the
// client's join sees to it: rdkafkaCaughtUp), and both close commits land.
func testGroupOnce(t *testing.T, c client) {
	addr := startBroker(t, map[string]int32{topic: partitions})
	adm := newAdmin(t, addr)
	group := c.name + "-once"
	a, b := c.name+"-a", c.name+"-b"

	l := newLedger()
	leaveA := c.join(t, addr, group, topic, a, l)
	leaveB := c.join(t, addr, group, topic, b, l)
	split := waitSplit(t, addr, adm, c.consumerProtocol, group, topic, partitions, a, b)
	t.Logf("split %v", split)

	want := makeRecords(0, 200)
	c.produce(t, addr, topic, want)
	st := readTopic(t, addr, adm, topic, len(want))
	checkStored(t, st, want)

	l.wait(t, len(want))
	if !c.consumerProtocol {
		waitCommitted(t, adm, group, topic, endOffsets(t, adm, topic))
	}
	leaveA()
	leaveB()
	got := l.all()
	checkConsumed(t, got, st)
	checkOwners(t, got, split, 0)
	if want, have := nextOffsets(got), committed(t, adm, group, topic); !maps.Equal(have, want) {
		t.Errorf("committed %v, want last consumed + 1 = %v", have, want)
	}
}

// testGroupRebalance: member a consumes alone; b joins, the partitions split
// and consumption continues on both; b leaves and a takes over b's
// partitions from b's committed offsets (no record again, none skipped).
// Each phase waits for the commits to reach the log end before the next
// membership change, so delivery stays exactly-once even for clients that
// commit on a timer.
func testGroupRebalance(t *testing.T, c client) {
	addr := startBroker(t, map[string]int32{topic: partitions})
	adm := newAdmin(t, addr)
	group := c.name + "-rebalance"
	a, b := c.name+"-a", c.name+"-b"
	l := newLedger()

	// a alone owns every partition.
	leaveA := c.join(t, addr, group, topic, a, l)
	alone := waitSplit(t, addr, adm, c.consumerProtocol, group, topic, partitions, a)
	c.produce(t, addr, topic, makeRecords(0, 100))
	l.wait(t, 100)
	waitCommitted(t, adm, group, topic, endOffsets(t, adm, topic))
	checkOwners(t, l.all(), alone, 0)

	// b joins: the partitions split, both consume.
	leaveB := c.join(t, addr, group, topic, b, l)
	split := waitSplit(t, addr, adm, c.consumerProtocol, group, topic, partitions, a, b)
	t.Logf("split after %s joined: %v", b, split)
	c.produce(t, addr, topic, makeRecords(100, 100))
	l.wait(t, 200)
	waitCommitted(t, adm, group, topic, endOffsets(t, adm, topic))
	checkOwners(t, l.all(), split, 100)
	for _, id := range []string{a, b} {
		if n := countFrom(l.all(), id, 100); n == 0 {
			t.Errorf("%s consumed none of records 100-199 after the split %v", id, split)
		}
	}

	// b leaves: a takes b's partitions over from b's commits.
	leaveB()
	handedOver := committed(t, adm, group, topic)
	waitSplit(t, addr, adm, c.consumerProtocol, group, topic, partitions, a)
	c.produce(t, addr, topic, makeRecords(200, 100))
	l.wait(t, 300)
	leaveA()

	got := l.all()
	checkOwners(t, got, alone, 200)
	for _, p := range split[b] {
		first := int64(-1)
		for _, r := range got {
			if r.Partition == p && indexOf(r.Value) >= 200 {
				first = r.Offset
				break
			}
		}
		if first != handedOver[p] {
			t.Errorf("partition %d: %s's first record after the takeover is offset %d, %s committed %d", p, a, first, b, handedOver[p])
		}
	}
	all := makeRecords(0, 300)
	st := readTopic(t, addr, adm, topic, len(all))
	checkStored(t, st, all)
	checkConsumed(t, got, st)
	if want, have := nextOffsets(got), committed(t, adm, group, topic); !maps.Equal(have, want) {
		t.Errorf("committed %v, want last consumed + 1 = %v", have, want)
	}
}

// countFrom counts the records with index from or more consumed by member.
func countFrom(recs []consumed, member string, from int) int {
	n := 0
	for _, r := range recs {
		if r.Member == member && indexOf(r.Value) >= from {
			n++
		}
	}
	return n
}
