package protocol

import (
	"bufio"
	"bytes"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// skimTrailer follows every skimmed frame in these tests: what the next
// request would be, which a skim must never read.
const skimTrailer = "NEXT"

// produceFrame is req encoded as a frame after its size prefix, with
// client id "skim".
func produceFrame(req *kmsg.ProduceRequest, corr int32) []byte {
	return kmsg.NewRequestFormatter(kmsg.FormatterClientID("skim")).AppendRequest(nil, req, corr)[4:]
}

// testProduce is a Produce request of version with two topics, the
// first with two partitions of records (first bytes and 17 bytes), the
// second with a null one.
func testProduce(version int16, acks int16, first int) *kmsg.ProduceRequest {
	req := kmsg.NewPtrProduceRequest()
	req.Version, req.Acks, req.TimeoutMillis = version, acks, 1500
	req.TransactionID = kmsg.StringPtr("txn")
	t1 := kmsg.NewProduceRequestTopic()
	t1.Topic = "orders"
	for i, n := range []int{first, 17} {
		p := kmsg.NewProduceRequestTopicPartition()
		p.Partition, p.Records = int32(i), bytes.Repeat([]byte{byte(i + 1)}, n)
		t1.Partitions = append(t1.Partitions, p)
	}
	t2 := kmsg.NewProduceRequestTopic()
	t2.Topic = "payments"
	p := kmsg.NewProduceRequestTopicPartition()
	p.Partition = 7
	t2.Partitions = append(t2.Partitions, p)
	req.Topics = append(req.Topics, t1, t2)
	return req
}

// TestSkimProduceEveryVersion: a Produce of every version kgo may send,
// skimmed from a stream, names what kmsg decodes from it (acks, topics,
// partitions, the records' sizes), keeps none of the records, and reads
// exactly the frame: the next request's bytes stay unread.
func TestSkimProduceEveryVersion(t *testing.T) {
	t.Parallel()
	for v := int16(3); v <= 12; v++ {
		frame := produceFrame(testProduce(v, -1, 3000), 99)
		r := bufio.NewReaderSize(strings.NewReader(string(frame)+skimTrailer), 16)
		s := NewSkimmer(r, int32(len(frame)))
		h, err := s.Header()
		require.NoError(t, err, "v%d", v)
		assert.Equal(t, RequestHeader{APIKey: 0, APIVersion: v, CorrelationID: 99, ClientID: ptr("skim")}, h)
		skim, err := s.SkimProduce(v, 1<<10)
		require.NoError(t, err, "v%d", v)
		assert.Equal(t, ProduceSkim{Acks: -1, Topics: []ProduceSkimTopic{
			{Topic: "orders", Partitions: []ProduceSkimPartition{{0, 3000}, {1, 17}}},
			{Topic: "payments", Partitions: []ProduceSkimPartition{{7, -1}}},
		}}, skim, "v%d", v)
		require.Zero(t, s.Left(), "v%d: the body ends the frame", v)
		require.NoError(t, s.Discard())
		rest, err := io.ReadAll(r)
		require.NoError(t, err)
		assert.Equal(t, skimTrailer, string(rest), "v%d: nothing past the frame is read", v)
	}
}

// TestSkimHeaderKeepsAShortClientID: a client id of 32767 bytes is read
// past; the header keeps its first SkimClientIDBytes.
func TestSkimHeaderKeepsAShortClientID(t *testing.T) {
	t.Parallel()
	id := strings.Repeat("c", 32767)
	frame := kmsg.NewRequestFormatter(kmsg.FormatterClientID(id)).AppendRequest(nil, testProduce(7, 1, 3000), 5)[4:]
	s := NewSkimmer(bytes.NewReader(frame), int32(len(frame)))
	h, err := s.Header()
	require.NoError(t, err)
	require.NotNil(t, h.ClientID)
	assert.Equal(t, id[:SkimClientIDBytes], *h.ClientID)
	skim, err := s.SkimProduce(7, 1<<10)
	require.NoError(t, err)
	assert.Equal(t, int16(1), skim.Acks)
	assert.Len(t, skim.Topics, 2)
}

// TestSkimProduceErrors: fields that run past the frame are
// ErrMalformedRequest (or ErrMalformedHeader), a request that names more
// than the bound is refused before it is kept, a version outside 3-12 is
// unsupported, and a stream that ends inside the frame says so.
func TestSkimProduceErrors(t *testing.T) {
	t.Parallel()
	frame := produceFrame(testProduce(9, -1, 3000), 1)
	// The frame as it is up to the records of the first partition, which
	// claim 3000 bytes.
	cut := bytes.Index(frame, bytes.Repeat([]byte{1}, 3000))
	require.Positive(t, cut)

	t.Run("records past the frame", func(t *testing.T) {
		t.Parallel()
		s := NewSkimmer(bytes.NewReader(frame), int32(cut+10))
		_, err := s.Header()
		require.NoError(t, err)
		_, err = s.SkimProduce(9, 1<<10)
		require.ErrorIs(t, err, ErrMalformedRequest)
		assert.ErrorIs(t, err, errPastFrame)
	})
	t.Run("stream ends inside the frame", func(t *testing.T) {
		t.Parallel()
		s := NewSkimmer(bytes.NewReader(frame[:cut+10]), int32(len(frame)))
		_, err := s.Header()
		require.NoError(t, err)
		_, err = s.SkimProduce(9, 1<<10)
		require.ErrorIs(t, err, io.ErrUnexpectedEOF)
	})
	t.Run("header past the frame", func(t *testing.T) {
		t.Parallel()
		_, err := NewSkimmer(bytes.NewReader(frame), 9).Header()
		require.ErrorIs(t, err, ErrMalformedHeader)
		_, err = NewSkimmer(bytes.NewReader(frame), 12).Header()
		require.ErrorIs(t, err, ErrMalformedHeader)
	})
	t.Run("over the bound", func(t *testing.T) {
		t.Parallel()
		// Two topics (48 + 6, 48 + 8) and three partitions (24): 134.
		for bound, ok := range map[int]bool{133: false, 134: true} {
			s := NewSkimmer(bytes.NewReader(frame), int32(len(frame)))
			_, err := s.Header()
			require.NoError(t, err)
			_, err = s.SkimProduce(9, bound)
			if ok {
				assert.NoError(t, err, "bound %d", bound)
			} else {
				assert.ErrorIs(t, err, errSkimBound, "bound %d", bound)
			}
		}
	})
	t.Run("a partition count no frame can hold", func(t *testing.T) {
		t.Parallel()
		body := []byte{0xff, 0xff, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 1, 't', 0x7f, 0xff, 0xff, 0xff}
		s := NewSkimmer(bytes.NewReader(body), int32(len(body)))
		_, err := s.SkimProduce(3, 1<<30)
		require.ErrorIs(t, err, ErrMalformedRequest)
	})
	t.Run("unsupported version", func(t *testing.T) {
		t.Parallel()
		_, err := NewSkimmer(bytes.NewReader(nil), 0).SkimProduce(13, 1<<10)
		require.ErrorIs(t, err, ErrUnsupportedVersion)
	})
}

// FuzzSkimProduce feeds bytes through the skimmer as a frame (the bytes
// after its size prefix) whose declared size is their length less short,
// from a stream holding them and the next request's bytes. Properties:
//   - nothing panics, and nothing past the frame is ever read;
//   - what a Produce skim keeps is within its bound;
//   - when kmsg decodes the frame as a Produce of version 3-12 and the
//     skim succeeds too, both name the same acks, topics, partitions and
//     record sizes.
func FuzzSkimProduce(f *testing.F) {
	for v := int16(3); v <= 12; v++ {
		// Small records: the fuzzer minimizes what it finds byte by byte.
		frame := produceFrame(testProduce(v, int16(v%2), 30), int32(v))
		f.Add(frame, uint16(0))
		f.Add(frame, uint16(v))
	}
	f.Add([]byte{0, 0, 0, 9, 0, 0, 0, 1, 0xff, 0xff, 0, 0xff, 0xff, 0xff, 0x7f}, uint16(0))
	f.Fuzz(func(t *testing.T, frame []byte, short uint16) {
		size := int32(len(frame) - int(short)%(len(frame)+1))
		const bound = 1 << 10
		r := bufio.NewReaderSize(bytes.NewReader(append(bytes.Clone(frame), skimTrailer...)), 16)
		s := NewSkimmer(r, size)
		h, err := s.Header()
		var skim ProduceSkim
		if err == nil && h.APIKey == 0 {
			skim, err = s.SkimProduce(h.APIVersion, bound)
		}
		if err == nil {
			require.NoError(t, s.Discard())
			cost := 0
			for _, tp := range skim.Topics {
				cost += skimTopicCost + len(tp.Topic) + skimPartitionCost*len(tp.Partitions)
			}
			require.LessOrEqual(t, cost, bound)
		}
		require.GreaterOrEqual(t, s.Left(), int64(0))
		rest, rerr := io.ReadAll(r)
		require.NoError(t, rerr)
		next := string(frame[size:]) + skimTrailer
		require.True(t, strings.HasSuffix(string(rest), next), "read past the frame: %q left", rest)
		if err == nil {
			require.Equal(t, next, string(rest), "a whole skim reads the whole frame")
		}

		if err != nil || h.APIKey != 0 {
			return
		}
		ph, body, perr := ParseHeader(frame[:size])
		if perr != nil {
			return
		}
		req, derr := DecodeRequest(ph, body)
		if derr != nil {
			return
		}
		p := req.(*kmsg.ProduceRequest)
		want := ProduceSkim{Acks: p.Acks}
		for _, tp := range p.Topics {
			st := ProduceSkimTopic{Topic: tp.Topic, Partitions: []ProduceSkimPartition{}}
			for _, pp := range tp.Partitions {
				n := int32(len(pp.Records))
				if pp.Records == nil {
					n = -1
				}
				st.Partitions = append(st.Partitions, ProduceSkimPartition{pp.Partition, n})
			}
			want.Topics = append(want.Topics, st)
		}
		got := skim
		for i := range got.Topics {
			if got.Topics[i].Partitions == nil {
				got.Topics[i].Partitions = []ProduceSkimPartition{}
			}
		}
		if !assert.ObjectsAreEqual(want, got) {
			t.Fatalf("kmsg decodes %+v, the skim %+v", want, got)
		}
	})
}
