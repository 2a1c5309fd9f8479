package server

import (
	"fmt"
	"math"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/protocol"
	"github.com/minibroker/minibroker/testkit/wiretest"
)

// hostileShapes names, for every API of the dispatch table, what its
// requests that hold the most per frame byte look like, and sets what the
// zero value would not (a Produce's acks, so that it is answered). The
// shapes themselves are made for every API alike (shapesOf): every array
// the request has, at any depth, filled with empty elements (null or
// empty names, unknown topics and groups, null partitions), every
// top-level string or byte array made long, and in flexible versions a tag section of
// many tags. TestRequestBoundsHoldHostileShapes fails for an API of the
// table missing here, so a new API cannot miss its bound.
var hostileShapes = map[kmsg.Key]struct {
	worst   string // the shape that measured the most per byte
	prepare func(kmsg.Request)
}{
	kmsg.Produce: {"topics with null partitions", func(r kmsg.Request) {
		r.(*kmsg.ProduceRequest).Acks = -1
	}},
	kmsg.Fetch:                   {"forgotten topics of no partitions", nil},
	kmsg.ListOffsets:             {"partitions of an unknown topic", nil},
	kmsg.Metadata:                {"unknown topics of empty names", nil},
	kmsg.OffsetCommit:            {"topics of empty names without partitions", nil},
	kmsg.OffsetFetch:             {"groups of empty ids with null topics", nil},
	kmsg.FindCoordinator:         {"empty coordinator keys", nil},
	kmsg.JoinGroup:               {"protocols of empty names", nil},
	kmsg.Heartbeat:               {"a long member id", nil},
	kmsg.LeaveGroup:              {"members of empty ids", nil},
	kmsg.SyncGroup:               {"assignments of empty member ids", nil},
	kmsg.DescribeGroups:          {"empty group ids", nil},
	kmsg.ListGroups:              {"empty state filters", nil},
	kmsg.SASLHandshake:           {"a long mechanism", nil},
	kmsg.ApiVersions:             {"a long client software name", nil},
	kmsg.CreateTopics:            {"topics of empty names", nil},
	kmsg.DeleteTopics:            {"empty topic names", nil},
	kmsg.DeleteRecords:           {"partitions of an unknown topic", nil},
	kmsg.InitProducerID:          {"a long transactional id", nil},
	kmsg.AddPartitionsToTxn:      {"partitions of an unknown topic", nil},
	kmsg.AddOffsetsToTxn:         {"a long transactional id", nil},
	kmsg.EndTxn:                  {"a long transactional id", nil},
	kmsg.TxnOffsetCommit:         {"topics of empty names without partitions", nil},
	kmsg.DescribeConfigs:         {"resources of empty names", nil},
	kmsg.AlterConfigs:            {"resources of empty names", nil},
	kmsg.IncrementalAlterConfigs: {"resources of empty names", nil},
	kmsg.SASLAuthenticate:        {"a long token", nil},
	kmsg.CreatePartitions:        {"topics of empty names", nil},
	kmsg.DeleteGroups:            {"empty group ids", nil},
	kmsg.OffsetDelete:            {"partitions of an unknown topic", nil},
	kmsg.DescribeCluster:         {"a tag section of many tags", nil},
	kmsg.DescribeTransactions:    {"empty transactional ids", nil},
	kmsg.ListTransactions:        {"empty state filters", nil},
	kmsg.ConsumerGroupHeartbeat:  {"empty subscribed topic names", nil},
	kmsg.ConsumerGroupDescribe:   {"empty group ids", nil},
}

// shape is one hostile request: how it is made, at n elements.
type shape struct {
	name  string
	array string // the path of the array it fills, "" for none
	make  func(n int) kmsg.Request
	long  bool // its elements' strings are long: it measures copies
}

// shapesOf returns the hostile shapes of API key at version.
func shapesOf(key kmsg.Key, version int16) []shape {
	newReq := func() kmsg.Request {
		req := kmsg.RequestForKey(int16(key))
		req.SetVersion(version)
		if p := hostileShapes[key].prepare; p != nil {
			p(req)
		}
		return req
	}
	var shapes []shape
	var paths [][]int
	slicePaths(reflect.TypeOf(newReq()).Elem(), nil, &paths)
	for _, p := range paths {
		shapes = append(shapes, shape{fmt.Sprintf("array %v of empty elements", p), pathName(reflect.TypeOf(newReq()).Elem(), p), func(n int) kmsg.Request {
			req := newReq()
			fill(reflect.ValueOf(req).Elem(), p, n)
			return req
		}, false})
	}
	for _, p := range paths {
		for _, names := range []struct {
			kind string
			of   func(i int) string
		}{
			{"distinct short names", func(i int) string { return fmt.Sprint(i) }},
			{"distinct invalid names", func(i int) string { return fmt.Sprint("/", i) }},
			{"1 KiB names", func(i int) string { return fmt.Sprintf("%01000d", i) }},
		} {
			shapes = append(shapes, shape{fmt.Sprintf("array %v of elements of %s", p, names.kind), pathName(reflect.TypeOf(newReq()).Elem(), p), func(n int) kmsg.Request {
				req := newReq()
				fill(reflect.ValueOf(req).Elem(), p, n)
				i := 0
				each(reflect.ValueOf(req).Elem(), p, false, func(v reflect.Value) {
					setNames(v, names.of(i))
					i++
				})
				return req
			}, names.kind == "1 KiB names"})
		}
	}
	top := reflect.TypeOf(newReq()).Elem()
	for i := range top.NumField() {
		f := top.Field(i)
		if f.Type == reflect.TypeFor[[]byte]() {
			shapes = append(shapes, shape{"a long " + f.Name, "", func(n int) kmsg.Request {
				req := newReq()
				reflect.ValueOf(req).Elem().Field(i).SetBytes(make([]byte, n))
				return req
			}, false})
			continue
		}
		if f.Type.Kind() != reflect.String && (f.Type.Kind() != reflect.Pointer || f.Type.Elem().Kind() != reflect.String) {
			continue
		}
		shapes = append(shapes, shape{"a long " + f.Name, "", func(n int) kmsg.Request {
			req := newReq()
			if !req.IsFlexible() {
				n = min(n, math.MaxInt16)
			}
			long := strings.Repeat("x", n)
			v := reflect.ValueOf(req).Elem().Field(i)
			if v.Kind() == reflect.Pointer {
				v.Set(reflect.ValueOf(&long))
			} else {
				v.SetString(long)
			}
			return req
		}, false})
	}
	if newReq().IsFlexible() {
		for _, p := range paths {
			if elem := pathType(reflect.TypeOf(newReq()).Elem(), p).Elem(); elem.Kind() != reflect.Struct {
				continue
			}
			shapes = append(shapes, shape{fmt.Sprintf("array %v of empty elements of a tag each", p), pathName(reflect.TypeOf(newReq()).Elem(), p), func(n int) kmsg.Request {
				req := newReq()
				fill(reflect.ValueOf(req).Elem(), p, n)
				each(reflect.ValueOf(req).Elem(), p, false, func(v reflect.Value) {
					v.FieldByName("UnknownTags").Addr().Interface().(*kmsg.Tags).Set(1000, nil)
				})
				return req
			}, false})
		}
		shapes = append(shapes, shape{"a tag section of many tags", "", func(n int) kmsg.Request {
			req := newReq()
			tags := reflect.ValueOf(req).Elem().FieldByName("UnknownTags").Addr().Interface().(*kmsg.Tags)
			for k := range n {
				tags.Set(uint32(1000+k), nil)
			}
			return req
		}, false})
	}
	return shapes
}

// realisticShapes returns the shapes of well-behaved requests of API key
// at version: every array the request has, at any depth, filled with
// elements whose strings are distinct 40-byte names (topics, groups,
// configs), as many as a real client may send.
func realisticShapes(key kmsg.Key, version int16) []shape {
	newReq := func() kmsg.Request {
		req := kmsg.RequestForKey(int16(key))
		req.SetVersion(version)
		if p := hostileShapes[key].prepare; p != nil {
			p(req)
		}
		return req
	}
	var shapes []shape
	var paths [][]int
	slicePaths(reflect.TypeOf(newReq()).Elem(), nil, &paths)
	for _, p := range paths {
		shapes = append(shapes, shape{fmt.Sprintf("array %v of named elements", p), pathName(reflect.TypeOf(newReq()).Elem(), p), func(n int) kmsg.Request {
			req := newReq()
			fill(reflect.ValueOf(req).Elem(), p, n)
			i := 0
			each(reflect.ValueOf(req).Elem(), p, true, func(v reflect.Value) {
				name(v, i)
				i++
			})
			return req
		}, false})
	}
	return shapes
}

// name sets the strings of v, an array's element, to a 40-byte name of
// i: v itself if a string, else its string fields.
func name(v reflect.Value, i int) {
	setNames(v, fmt.Sprintf("realistic-name-%025d", i))
}

// setNames sets the strings of v, an array's element, to n: v itself if
// a string, else its string fields.
func setNames(v reflect.Value, n string) {
	set := func(f reflect.Value) {
		switch {
		case f.Kind() == reflect.String:
			f.SetString(n)
		case f.Kind() == reflect.Pointer && f.Type().Elem().Kind() == reflect.String:
			f.Set(reflect.ValueOf(&n))
		}
	}
	if v.Kind() != reflect.Struct {
		set(v)
		return
	}
	for j := range v.NumField() {
		set(v.Field(j))
	}
}

// pathName returns the path of kmsg field names of the array at path
// from t, a struct type, as api.holds names it.
func pathName(t reflect.Type, path []int) string {
	f := t.Field(path[0])
	if len(path) == 1 {
		return f.Name
	}
	return f.Name + "." + pathName(f.Type.Elem(), path[1:])
}

// pathType returns the type of the array at path from t, a struct type.
func pathType(t reflect.Type, path []int) reflect.Type {
	f := t.Field(path[0]).Type
	if len(path) == 1 {
		return f
	}
	return pathType(f.Elem(), path[1:])
}

// each calls fn for every element of the array at path of v (a struct)
// and, if named, names the one element of each array above it.
func each(v reflect.Value, path []int, named bool, fn func(reflect.Value)) {
	f := v.Field(path[0])
	if len(path) > 1 {
		if f.Len() > 0 {
			if named {
				name(f.Index(0), 0)
			}
			each(f.Index(0), path[1:], named, fn)
		}
		return
	}
	for i := range f.Len() {
		fn(f.Index(i))
	}
}

// slicePaths appends to out the paths (field indexes from t, a struct
// type) of every array of a request: slices other than byte slices.
func slicePaths(t reflect.Type, prefix []int, out *[][]int) {
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Type.Kind() != reflect.Slice || f.Type.Elem().Kind() == reflect.Uint8 {
			continue
		}
		p := append(append([]int(nil), prefix...), i)
		*out = append(*out, p)
		if f.Type.Elem().Kind() == reflect.Struct {
			slicePaths(f.Type.Elem(), p, out)
		}
	}
}

// fill sets the array at path of v (a struct) to n zero elements, with
// one zero element in each array above it.
func fill(v reflect.Value, path []int, n int) {
	f := v.Field(path[0])
	if len(path) == 1 {
		f.Set(reflect.MakeSlice(f.Type(), n, n))
		return
	}
	if f.Len() == 0 {
		f.Set(reflect.MakeSlice(f.Type(), 1, 1))
	}
	fill(f.Index(0), path[1:], n)
}

// frameOf returns the frame (after its size) of s's request at about size
// bytes, or nil when the shape does not grow with n at this version (an
// array or a tag section the version does not have).
func frameOf(s shape, size int) []byte {
	f0 := rawRequest(s.make(0), 7, "hostile")[4:]
	f1 := rawRequest(s.make(1), 7, "hostile")[4:]
	per := len(f1) - len(f0)
	if per <= 0 || size <= len(f0) {
		return nil
	}
	return rawRequest(s.make((size-len(f0))/per), 7, "hostile")[4:]
}

// held returns the bytes allocated from the decoding of frame to the
// encoding of its answer, as the connection loop handles it, the fewest
// of two tries: allocation elsewhere in the process can only add to it.
func held(t *testing.T, srv *Server, frame []byte) uint64 {
	t.Helper()
	least := uint64(math.MaxUint64)
	for range 2 {
		r := &request{ctx: t.Context(), logger: srv.logger, peer: &peer{remote: "127.0.0.1:40000", host: "/127.0.0.1"}}
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		resp, corr, err := srv.handleFrame(r, frame)
		var out []byte
		if err == nil && resp != nil {
			out = protocol.AppendResponse(nil, corr, resp)
		}
		runtime.ReadMemStats(&after)
		runtime.KeepAlive(out)
		least = min(least, after.TotalAlloc-before.TotalAlloc)
	}
	return least
}

// reservedFor returns what the server reserves for frame's request beyond
// the frame, were it above what a request holds unreserved.
func reservedFor(srv *Server, frame []byte) int64 {
	h, body, err := protocol.ParseHeader(frame)
	if err != nil {
		panic(err)
	}
	return boundOf(countElements(srv.handlers[h.APIKey].layouts[h.APIVersion], body))
}

// TestRequestBoundsHoldHostileShapes: for every API of the dispatch table
// and every version served, every hostile shape at about 64 KiB holds,
// from its decoding to its answer encoded, no more than the server
// reserves for it (the bytes allocated, which bound what is held), and
// every realistic shape (realisticShapes) reserves at most
// realisticSlack times what it holds, so that no factor can grow to
// refuse real requests. And at the frame cap the worst shapes are refused
// once counted, unless their bound fits the default budget.
func TestRequestBoundsHoldHostileShapes(t *testing.T) {
	if testing.Short() {
		t.Skip("allocates about a gigabyte")
	}
	if raceEnabled {
		t.Skip("measures allocations, which the race detector changes: `make test` runs it without -race")
	}
	const size = 64 << 10
	for key := range handlers() {
		name := kmsg.NameForKey(int16(key))
		if _, ok := hostileShapes[key]; !ok {
			t.Errorf("%s has no hostile shape in hostileShapes", name)
			continue
		}
		t.Run(name, func(t *testing.T) {
			e := newEnv(t)
			vr, ok := protocol.VersionsFor(int16(key))
			require.True(t, ok)
			var worst float64
			var worstShape string
			var worstOf shape
			need := map[string]elementHolds{} // what an element of each array needs
			for v := vr.Min; v <= vr.Max; v++ {
				shapes := shapesOf(key, v)
				require.NotEmpty(t, shapes, "%s v%d has no hostile shape", name, v)
				for _, s := range shapes {
					frame := frameOf(s, size)
					if frame == nil {
						continue
					}
					got := held(t, e.srv, frame)
					bound := reservedFor(e.srv, frame)
					if ratio := float64(got) / float64(len(frame)); ratio > worst {
						worst, worstShape, worstOf = ratio, fmt.Sprintf("v%d %s", v, s.name), s
					}
					if h, body, _ := protocol.ParseHeader(frame); s.array != "" {
						c := countElements(e.srv.handlers[key].layouts[h.APIVersion], body)
						n, declared := need[s.array], e.srv.handlers[key].holds[s.array]
						switch rest := int64(got) - (bound - c.held); {
						case s.long && c.strings > 0:
							n.copies = max(n.copies, int32((rest-c.count*int64(declared.each))/c.strings))
						case !s.long && c.count > 0:
							n.each = max(n.each, int32((rest-c.strings*int64(declared.copies))/c.count))
						}
						need[s.array] = n
					}
					assert.LessOrEqual(t, int64(got), bound, "%s v%d, %s: %d bytes held for a frame of %d", name, v, s.name, got, len(frame))
				}
				for _, s := range realisticShapes(key, v) {
					frame := frameOf(s, size)
					if frame == nil {
						continue
					}
					got := held(t, e.srv, frame)
					bound := reservedFor(e.srv, frame)
					assert.LessOrEqual(t, bound, realisticSlack*int64(got), "%s v%d, %s: %d bytes reserved for %d held", name, v, s.name, bound, got)
				}
			}
			t.Logf("%s: at most %.1f bytes per frame byte (%s); an element holds at most, beyond its struct: %v (declared %v)", name, worst, worstShape, need, e.srv.handlers[key].holds)

			// The worst shape just under the frame cap is refused once
			// counted, or held within its bound.
			// A shape is linear in its elements: one whose bound at 64 KiB,
			// scaled to the cap, passes twice the budget is refused there
			// (TestHostileAmplifiedRequests sends them), and not built.
			small := frameOf(worstOf, size)
			if reservedFor(e.srv, small)*int64(protocol.DefaultMaxFrameBytes/len(small)) > 2*e.srv.mem.work.max {
				return
			}
			frame := frameOf(worstOf, protocol.DefaultMaxFrameBytes-64)
			require.NotNil(t, frame)
			if bound := reservedFor(e.srv, frame); bound > e.srv.mem.work.max {
				return // refused once counted
			}
			got := held(t, e.srv, frame)
			assert.LessOrEqual(t, int64(got), reservedFor(e.srv, frame), "%s just under the cap, %s: %d bytes held for a frame of %d", name, worstShape, got, len(frame))
		})
	}
}

// realisticSlack is the most a realistic request may reserve, times what
// it holds.
const realisticSlack = 4

// TestRequestBoundIsReservedOrRefused: over a socket at the default
// budget, a DeleteTopics of 5,000 40-byte names reserves its counted
// bound in the work lane while it is handled and is answered for every
// name, and one of 200,000 empty names (200 KiB, a bound past the budget)
// is refused once counted: its connection is closed, logged with what it
// would hold, and counted as a refusal.
func TestRequestBoundIsReservedOrRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	addr := e.serve()

	real := kmsg.NewPtrDeleteTopicsRequest()
	real.Version = 5
	for i := range 5_000 {
		real.TopicNames = append(real.TopicNames, fmt.Sprintf("no-such-topic-%026d", i))
	}
	frame := rawRequest(real, 7, "admin")[4:]
	bound := reservedFor(e.srv, frame)
	require.Greater(t, bound, int64(smallRequestBytes))
	c := wiretest.Dial(t, addr, "admin")
	resp := wiretest.Do[*kmsg.DeleteTopicsResponse](t, c, real)
	require.Len(t, resp.Topics, 5_000)
	for i, rt := range resp.Topics {
		require.Equal(t, real.TopicNames[i], *rt.Topic)
		require.Equal(t, kerr.UnknownTopicOrPartition.Code, rt.ErrorCode, *rt.Topic)
	}
	st := e.srv.MemoryStats()
	require.GreaterOrEqual(t, st.Work.Peak, bound, "the counted bound was reserved")
	require.Zero(t, st.Work.Refusals)

	hostile := kmsg.NewPtrDeleteTopicsRequest()
	hostile.Version, hostile.TopicNames = 5, make([]string, 200_000)
	c = wiretest.Dial(t, addr, "hostile")
	require.NoError(t, c.Send(rawRequest(hostile, 8, "hostile")))
	wiretest.RequireClosed(t, c)
	closed := e.logs.Find("closing connection")
	require.Len(t, closed, 1)
	require.Contains(t, closed[0].Attrs["err"], "a DeleteTopics request of ")
	require.Contains(t, closed[0].Attrs["err"], "past the budget's 134217728")
	require.Equal(t, int64(1), e.srv.MemoryStats().Work.Refusals)
}
