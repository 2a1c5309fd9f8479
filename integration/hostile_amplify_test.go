package integration

// Requests that decode and answer to far more than their frame: eight
// connections each send one frame of many tiny elements (null partitions,
// empty names, unknown topics). The broker runs in a process of its own,
// whose peak resident set (VmHWM) is measured.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/protocol"
)

// amplifyShapes are the hostile requests, by name: a request of n tiny
// elements.
var amplifyShapes = map[string]func(n int) kmsg.Request{
	"produce-null-partitions": func(n int) kmsg.Request { // v9: 3 bytes a topic
		r := kmsg.NewPtrProduceRequest()
		r.Version, r.Acks, r.Topics = 9, -1, make([]kmsg.ProduceRequestTopic, n)
		return r
	},
	"offset-fetch": func(n int) kmsg.Request { // v9: groups of empty ids, all their offsets
		r := kmsg.NewPtrOffsetFetchRequest()
		r.Version, r.Groups = 9, make([]kmsg.OffsetFetchRequestGroup, n)
		return r
	},
	"add-partitions-to-txn-unknown": func(n int) kmsg.Request {
		r := kmsg.NewPtrAddPartitionsToTxnRequest()
		r.Version, r.TransactionalID = 3, "txn"
		r.Topics = []kmsg.AddPartitionsToTxnRequestTopic{{Topic: "unknown", Partitions: make([]int32, n)}}
		return r
	},
	"create-topics": func(n int) kmsg.Request {
		r := kmsg.NewPtrCreateTopicsRequest()
		r.Version, r.Topics = 7, make([]kmsg.CreateTopicsRequestTopic, n)
		return r
	},
	"delete-topics": func(n int) kmsg.Request {
		r := kmsg.NewPtrDeleteTopicsRequest()
		r.Version, r.TopicNames = 5, make([]string, n)
		return r
	},
	"create-partitions": func(n int) kmsg.Request {
		r := kmsg.NewPtrCreatePartitionsRequest()
		r.Version, r.Topics = 3, make([]kmsg.CreatePartitionsRequestTopic, n)
		return r
	},
	"offset-delete": func(n int) kmsg.Request {
		r := kmsg.NewPtrOffsetDeleteRequest()
		r.Group = "g"
		r.Topics = []kmsg.OffsetDeleteRequestTopic{{Topic: "unknown", Partitions: make([]kmsg.OffsetDeleteRequestTopicPartition, n)}}
		return r
	},
	"describe-transactions": func(n int) kmsg.Request {
		r := kmsg.NewPtrDescribeTransactionsRequest()
		r.TransactionalIDs = make([]string, n)
		return r
	},
	"list-offsets": func(n int) kmsg.Request {
		r := kmsg.NewPtrListOffsetsRequest()
		r.Version = 7
		r.Topics = []kmsg.ListOffsetsRequestTopic{{Topic: "unknown", Partitions: make([]kmsg.ListOffsetsRequestTopicPartition, n)}}
		return r
	},
	"txn-offset-commit": func(n int) kmsg.Request {
		r := kmsg.NewPtrTxnOffsetCommitRequest()
		r.Version, r.TransactionalID, r.Group = 3, "txn", "g"
		r.Topics = make([]kmsg.TxnOffsetCommitRequestTopic, n)
		return r
	},
	"delete-records": func(n int) kmsg.Request {
		r := kmsg.NewPtrDeleteRecordsRequest()
		r.Version, r.Topics = 2, make([]kmsg.DeleteRecordsRequestTopic, n)
		return r
	},
	"offset-commit": func(n int) kmsg.Request {
		r := kmsg.NewPtrOffsetCommitRequest()
		r.Version, r.Generation, r.Topics = 8, -1, make([]kmsg.OffsetCommitRequestTopic, n)
		return r
	},
	"list-transactions": func(n int) kmsg.Request {
		r := kmsg.NewPtrListTransactionsRequest()
		r.StateFilters = make([]string, n)
		return r
	},
}

// amplifyFrame returns the frame, size prefix included, of shape with as
// many elements as fit in size bytes.
func amplifyFrame(shape string, size int) []byte {
	build := amplifyShapes[shape]
	f := kmsg.NewRequestFormatter(kmsg.FormatterClientID("abuse"))
	f0, f1 := f.AppendRequest(nil, build(0), 7), f.AppendRequest(nil, build(1), 7)
	per := len(f1) - len(f0)
	return f.AppendRequest(nil, build((size-(len(f0)-4))/per), 7)
}

// amplifyConns is how many connections send at once.
const amplifyConns = 8

// sendAmplified sends frame on a new connection and reports whether it was
// answered (false: the broker closed the connection instead).
func sendAmplified(t *testing.T, addr string, frame []byte) bool {
	c := abuseDial(t, addr)
	if err := c.Send(frame); err != nil {
		require.True(t, closedByPeer(err), "send: %v", err)
		return false
	}
	resp, err := c.ReadFrame()
	if err != nil {
		require.True(t, closedByPeer(err), "read: %v", err)
		return false
	}
	require.Equal(t, uint32(7), binary.BigEndian.Uint32(resp), "the answer's correlation id")
	return true
}

func closedByPeer(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// abuseAmplify sends, on amplifyConns connections at once, one frame each
// of shape: of size bytes, or with "largest:" before the shape, of the
// largest size, halving from the cap, that the broker answers.
func abuseAmplify(t *testing.T, addr, kind string) {
	shape, largest := strings.CutPrefix(kind, "largest:")
	require.Contains(t, amplifyShapes, shape)
	size := protocol.DefaultMaxFrameBytes - 64
	if largest {
		for ; size >= 8<<10 && !sendAmplified(t, addr, amplifyFrame(shape, size)); size /= 2 {
		}
	}
	frame := amplifyFrame(shape, size)
	var answered, closed atomic.Int32
	var wg sync.WaitGroup
	for range amplifyConns {
		wg.Go(func() {
			if sendAmplified(t, addr, frame) {
				answered.Add(1)
			} else {
				closed.Add(1)
			}
		})
	}
	wg.Wait()
	fmt.Printf("abuse: shape=%s frame=%d answered=%d closed=%d\n", shape, len(frame)-4, answered.Load(), closed.Load())
}

// amplifyPeak runs attack kind against a new broker process with the
// default limits and returns the attacker's report and the broker's peak
// resident set in bytes.
func amplifyPeak(t *testing.T, kind string) (string, uint64) {
	t.Helper()
	p := startProcess(t, "--data-dir", t.TempDir(), "--topic", "orders:4")
	report := runAbuse(t, p.Addr, "amplify:"+kind)
	return report, procStatus(t, p.cmd.Process.Pid, "VmHWM")
}

// TestHostileAmplifiedRequests: eight connections each send a frame just
// under the cap of the shapes that hold the most per frame byte (a
// Produce of null partitions, OffsetFetch of groups, AddPartitionsToTxn
// of unknown partitions, DeleteTopics and DescribeTransactions of empty
// names): each is refused once its elements are counted, before it is
// decoded. Then eight frames each of the largest size the broker answers:
// the process stays under the bound the abuse tests hold (400 MiB), as
// the budget serves them a few at a time.
func TestHostileAmplifiedRequests(t *testing.T) {
	t.Parallel()
	for _, shape := range []string{"produce-null-partitions", "offset-fetch", "add-partitions-to-txn-unknown", "delete-topics", "describe-transactions"} {
		report, peak := amplifyPeak(t, shape)
		t.Logf("%s; peak %d MiB", report, peak>>20)
		assert.Contains(t, report, "answered=0 closed=8", "%s at the cap", shape)
		assert.Less(t, peak, uint64(abusePeakRSS), "%s at the cap: peak RSS", shape)

		report, peak = amplifyPeak(t, "largest:"+shape)
		t.Logf("%s; peak %d MiB", report, peak>>20)
		assert.Contains(t, report, "answered=8 closed=0", "%s at the largest size served", shape)
		assert.Less(t, peak, uint64(abusePeakRSS), "%s at the largest size served: peak RSS", shape)
	}
}

// amplifyReportEnv, set, makes TestHostileAmplificationReport measure
// every shape.
const amplifyReportEnv = "MINIBROKER_AMPLIFY_REPORT"

// TestHostileAmplificationReport measures, for every shape, the broker's
// peak resident set while eight connections each send a frame of it just
// under the cap, for docs/reliability.md: it runs only with
// MINIBROKER_AMPLIFY_REPORT=1, one shape at a time (a broker without the
// bound takes gigabytes).
//
//	MINIBROKER_AMPLIFY_REPORT=1 go test -count=1 -run '^TestHostileAmplificationReport$' -v ./integration/
func TestHostileAmplificationReport(t *testing.T) {
	if os.Getenv(amplifyReportEnv) == "" {
		t.Skip("set " + amplifyReportEnv + "=1 to measure")
	}
	shapes := make([]string, 0, len(amplifyShapes))
	for s := range amplifyShapes {
		shapes = append(shapes, s)
	}
	slices.Sort(shapes)
	for _, shape := range shapes {
		report, peak := amplifyPeak(t, shape)
		t.Logf("| %s | %d MiB | %s |", shape, peak>>20, report)
	}
}
