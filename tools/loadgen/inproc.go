package loadgen

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/clock"
	"github.com/minibroker/minibroker/coordinator"
	"github.com/minibroker/minibroker/offsets"
)

// wireJoin is the JoinRequest the server builds for a load generator
// member: what a member costs the coordinator when it joins over the wire.
func wireJoin(group, topic string, metadata []byte) coordinator.JoinRequest {
	return coordinator.JoinRequest{
		Group: group, ClientID: "loadgen", ClientHost: "/127.0.0.1",
		SessionTimeout: time.Minute, ProtocolType: coordinator.ConsumerProtocolType,
		Protocols: []coordinator.Protocol{{Name: ProtocolName, Metadata: metadata, Topics: []string{topic}}},
		WireRules: true,
	}
}

func consumerMetadata(topic string) []byte {
	meta := kmsg.NewConsumerMemberMetadata()
	meta.Topics = []string{topic}
	return meta.AppendTo(nil)
}

// MeasureRebalance returns the median time of one rebalance of a group of
// members members subscribed to one topic of partitions partitions: the
// chapter's join of a known member, which always rebalances, run rounds
// times in an in-process coordinator.
func MeasureRebalance(members, partitions, rounds int) (time.Duration, error) {
	c, err := coordinator.New(coordinator.Config{Clock: clock.System{}, Store: offsets.NewMemory(),
		Topics: coordinator.StaticTopics{"bench": int32(partitions)}})
	if err != nil {
		return 0, err
	}
	join := func(id string) error {
		_, err := c.Join(coordinator.JoinRequest{Group: "g", MemberID: id, SessionTimeout: time.Minute, Topics: []string{"bench"}})
		return err
	}
	for i := range members {
		if err := join(fmt.Sprintf("m-%06d", i)); err != nil {
			return 0, err
		}
	}
	times := make([]time.Duration, rounds)
	for i := range times {
		start := time.Now()
		if err := join("m-000000"); err != nil {
			return 0, err
		}
		times[i] = time.Since(start)
	}
	slices.Sort(times)
	return times[len(times)/2], nil
}

// MeasureIdleMembers joins groups x perGroup members, as the wire joins
// them, into an in-process coordinator and returns the live heap they
// hold per member (runtime.MemStats.HeapAlloc after a GC, before and
// after). The coordinator stays reachable until the second reading.
func MeasureIdleMembers(groups, perGroup, partitions int) (float64, error) {
	c, err := coordinator.New(coordinator.Config{Clock: clock.System{}, Store: offsets.NewMemory(),
		Topics: coordinator.StaticTopics{"bench": int32(partitions)}})
	if err != nil {
		return 0, err
	}
	metadata := consumerMetadata("bench")
	before := heapAlloc()
	for g := range groups {
		group := "members-" + strconv.Itoa(g)
		for range perGroup {
			// Each request carries its own copy of the metadata, as a
			// decoded request does.
			if _, err := c.Join(wireJoin(group, "bench", slices.Clone(metadata))); err != nil {
				return 0, err
			}
		}
	}
	after := heapAlloc()
	runtime.KeepAlive(c)
	return float64(after-before) / float64(groups*perGroup), nil
}

func heapAlloc() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// WriteStoredOffsets writes dir/offsets.json in the chapter's format with
// n offsets of topic "stored" spread over the given groups, so that a
// broker starts with n offsets stored.
func WriteStoredOffsets(dir string, groups []string, n int) error {
	f, err := os.Create(filepath.Join(dir, offsets.FileName))
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	fmt.Fprint(w, `{"version":1,"groups":{`)
	per := (n + len(groups) - 1) / len(groups)
	written := 0
	for gi, g := range groups {
		if gi > 0 {
			w.WriteByte(',')
		}
		fmt.Fprintf(w, "%q:[", g)
		for p := 0; p < per && written < n; p++ {
			if p > 0 {
				w.WriteByte(',')
			}
			fmt.Fprintf(w, `{"topic":"stored","partition":%d,"offset":%d}`, p, p+1)
			written++
		}
		w.WriteByte(']')
	}
	fmt.Fprint(w, "}}\n")
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
